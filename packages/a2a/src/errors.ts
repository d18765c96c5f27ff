import { ToolnexusError } from "@toolnexus/core"

/** A remote agent's card could not be read, or names no interface this package can speak. */
export class A2AConnectError extends ToolnexusError {
  /** `"A2AConnectError"`, for `err.name === "A2AConnectError"` (its `code` is `"TNX_A2A_CONNECT"`). */
  override readonly name = "A2AConnectError"
  static override readonly family = "TNX_A2A_CONNECT"
  /** The URL the card was read from (the base URL, or the card's own interface URL). */
  readonly url: string
  /** What went wrong, without header values or tokens. */
  readonly reason: string
  constructor(url: string, reason: string, options?: { cause?: unknown }) {
    super("TNX_A2A_CONNECT", `A2A agent at ${url}: ${reason}`, options)
    this.url = url
    this.reason = reason
  }
}
