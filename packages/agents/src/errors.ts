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

  /** `instanceof` support: {@link AgentsError.isInstance} of the class on its right (copies match too). */
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
  /** `"RuntimeError"` (`"ClosedError"` on that subclass): `err.name === "RuntimeError"` tells it apart. */
  override readonly name: string = "RuntimeError"
  /** `"TNX_RUNTIME"`, or `"TNX_CLOSED"` for a {@link ClosedError}: test `err.code === "TNX_RUNTIME"`. */
  declare readonly code: "TNX_RUNTIME" | "TNX_CLOSED"
  /** Which refusal it is, e.g. `err.reason === "max_children"`; see {@link RuntimeErrorReason}. */
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
  /** `"ClosedError"`: `err.name === "ClosedError"` tells it from other runtime refusals. */
  override readonly name = "ClosedError"
  /** Always `"closed"`. */
  declare readonly reason: "closed"
  /** The id of the closed handle (for a refused spawn, the parent's), e.g. `root/lead.1`. */
  readonly handleId: string

  constructor(handleId: string, what: string) {
    super("closed", `cannot ${what}: handle ${handleId} is closed`, "TNX_CLOSED")
    this.handleId = handleId
  }
}

/** `post` to a handle whose inbox is at its cap (`code: "TNX_INBOX_FULL"`). Nothing was added. */
export class InboxFullError extends AgentsError {
  static override readonly marker: symbol = Symbol.for("toolnexus.agents.InboxFullError")
  /** `"InboxFullError"`: `err.name === "InboxFullError"` tells it apart. */
  override readonly name = "InboxFullError"
  /** `"TNX_INBOX_FULL"`: test `err.code === "TNX_INBOX_FULL"` (or `isToolnexusError(err, code)`). */
  declare readonly code: "TNX_INBOX_FULL"
  /** The id of the handle whose inbox is full, e.g. `root/lead.1`. */
  readonly handleId: string
  /** The inbox capacity it reached: `RuntimeOptions.inboxCap` (default 100). */
  readonly cap: number

  constructor(handleId: string, cap: number) {
    super("TNX_INBOX_FULL", `the inbox of ${handleId} is full (cap ${cap}); the item was not added`)
    this.handleId = handleId
    this.cap = cap
  }
}
