import { ConfigError } from "../errors.js"

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/

/** @internal Refuses a tool name the providers would reject. */
export function assertToolName(name: unknown): asserts name is string {
  if (typeof name !== "string" || !TOOL_NAME.test(name)) {
    throw new ConfigError(
      `invalid tool name ${JSON.stringify(name)}: names must match ${TOOL_NAME.source} (letters, digits, "_" or "-", 1 to 64 characters)`,
    )
  }
}
