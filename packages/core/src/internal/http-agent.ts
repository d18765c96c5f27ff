import { Agent } from "undici"

let shared: Agent | undefined

/** @internal The process-wide keep-alive dispatcher for LLM and HTTP-tool requests. */
export function sharedAgent(): Agent {
  shared ??= new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000, connections: 128 })
  return shared
}
