import type { JSONSchema, Tool } from "../types.js"
import { assertToolName } from "./tool-name.js"

/**
 * Declares a tool the caller executes (source `"relay"`). Nothing runs locally: a call
 * suspends the run with a `"tool_call"` request carrying every relay call of the turn.
 *
 * @example
 * const toolkit = await createToolkit({ extraTools: [relayTool("read_file", "Read a file on the user's machine")] })
 */
export function relayTool(
  name: string,
  description: string,
  inputSchema: JSONSchema = { type: "object", properties: {} },
): Tool {
  assertToolName(name)
  return {
    name,
    description,
    inputSchema,
    source: "relay",
    // The loop intercepts relay calls before execution; reaching this is a host bug.
    execute: () => ({ output: `relay tool ${name} is executed by the caller, not locally`, isError: true }),
  }
}
