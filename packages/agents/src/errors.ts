import { ToolnexusError } from "@toolnexus/core"

/** Codes of {@link RuntimeError}. */
export type RuntimeErrorCode =
  | "unknown_agent"
  | "max_children"
  | "max_depth"
  | "budget_exhausted"
  | "closed"
  | "invalid_transition"

/** The runtime refused an operation: unknown agent, spawn limits, or a closed handle. */
export class RuntimeError extends ToolnexusError {
  override readonly name: string = "RuntimeError"
  declare readonly code: RuntimeErrorCode
  constructor(code: RuntimeErrorCode, message: string) {
    super(code, message)
  }
}

/** An operation on a closed handle (`code: "closed"`). */
export class ClosedError extends RuntimeError {
  override readonly name = "ClosedError"
  readonly handleId: string
  constructor(handleId: string, what: string) {
    super("closed", `cannot ${what}: handle ${handleId} is closed`)
    this.handleId = handleId
  }
}

/** `post` to a handle whose inbox is at its cap. Nothing was added. */
export class InboxFullError extends ToolnexusError {
  override readonly name = "InboxFullError"
  readonly handleId: string
  constructor(handleId: string, cap: number) {
    super("TNX_INBOX_FULL", `the inbox of ${handleId} is full (cap ${cap}); the item was not added`)
    this.handleId = handleId
  }
}
