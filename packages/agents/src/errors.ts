import { ToolnexusError } from "@toolnexus/core"

/** Why the runtime refused an operation: the `reason` of a {@link RuntimeError}. */
export type RuntimeErrorReason =
  | "unknown_agent"
  | "max_children"
  | "max_depth"
  | "budget_exhausted"
  | "closed"
  /** A defect in the runtime (a state change its transition table forbids); please report it. */
  | "invalid_transition"

type ErrorClass = abstract new (...args: any[]) => ToolnexusError

/**
 * The base of every `@toolnexus/agents` error. Each class names its own `Symbol.for` marker
 * and an instance carries the markers of its whole class chain (core's `ToolnexusError`
 * stamps them, as for every package's errors), so `isInstance` and `instanceof` recognise an
 * error made by another installed copy of the package, subclasses included
 * (`RuntimeError.isInstance(closedError)` is true). `isToolnexusError(e, code)` from core
 * checks any package's error.
 */
export abstract class AgentsError extends ToolnexusError {
  /** The marker of this class; every subclass declares its own. */
  static readonly marker: symbol = Symbol.for("toolnexus.agents.error")

  /** True when `value` is an error of this class (or a subclass), from any copy of the package. */
  static override isInstance<T extends ErrorClass>(this: T, value: unknown): value is InstanceType<T> {
    // biome-ignore lint/complexity/noThisInStatic: the class it is called on names the marker
    const { marker } = this as unknown as typeof AgentsError
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[marker] === true
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: `instanceof` asks the class on its right
    return (this as typeof AgentsError).isInstance(value)
  }
}

/**
 * The runtime refused an operation: an unknown agent or handle, a spawn limit, a closed
 * handle. `code` is `TNX_RUNTIME` (`TNX_CLOSED` for {@link ClosedError}); `reason` says which.
 */
export class RuntimeError extends AgentsError {
  static override readonly marker: symbol = Symbol.for("toolnexus.agents.RuntimeError")
  override readonly name: string = "RuntimeError"
  declare readonly code: "TNX_RUNTIME" | "TNX_CLOSED"
  readonly reason: RuntimeErrorReason

  constructor(
    reason: RuntimeErrorReason,
    message: string,
    code: "TNX_RUNTIME" | "TNX_CLOSED" = "TNX_RUNTIME",
  ) {
    super(code, message)
    this.reason = reason
  }
}

/** An operation on a closed handle (`code: "TNX_CLOSED"`, `reason: "closed"`). Nothing changed. */
export class ClosedError extends RuntimeError {
  static override readonly marker: symbol = Symbol.for("toolnexus.agents.ClosedError")
  override readonly name = "ClosedError"
  declare readonly reason: "closed"
  readonly handleId: string

  constructor(handleId: string, what: string) {
    super("closed", `cannot ${what}: handle ${handleId} is closed`, "TNX_CLOSED")
    this.handleId = handleId
  }
}

/** `post` to a handle whose inbox is at its cap (`code: "TNX_INBOX_FULL"`). Nothing was added. */
export class InboxFullError extends AgentsError {
  static override readonly marker: symbol = Symbol.for("toolnexus.agents.InboxFullError")
  override readonly name = "InboxFullError"
  declare readonly code: "TNX_INBOX_FULL"
  readonly handleId: string
  readonly cap: number

  constructor(handleId: string, cap: number) {
    super("TNX_INBOX_FULL", `the inbox of ${handleId} is full (cap ${cap}); the item was not added`)
    this.handleId = handleId
    this.cap = cap
  }
}
