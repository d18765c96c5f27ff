import { ToolnexusError } from "@toolnexus/core"

/**
 * A request is held by a saved runtime's tree, so it cannot be answered as a plain
 * conversation: replaying a handle's transcript with a bare client would run it without its
 * tools or its parents. Deliver the answer with `deliverAnswer(store, answer, { runtime })`
 * or `resumeRuntime(store, runtimeKey, answer, opts)`. Nothing was claimed or changed.
 */
export class RuntimeHeldError extends ToolnexusError {
  override readonly name = "RuntimeHeldError"
  static override readonly family = "TNX_RUNTIME_HELD"
  readonly requestId: string
  readonly runtimeKey: string
  readonly conversationId: string
  constructor(requestId: string, runtimeKey: string, conversationId: string) {
    super(
      "TNX_RUNTIME_HELD",
      `request ${requestId} (conversation ${JSON.stringify(conversationId)}) is held by the saved runtime ` +
        `${JSON.stringify(runtimeKey)}: answer it with deliverAnswer(store, answer, { runtime }) or ` +
        `resumeRuntime(store, ${JSON.stringify(runtimeKey)}, answer, opts)`,
    )
    this.requestId = requestId
    this.runtimeKey = runtimeKey
    this.conversationId = conversationId
  }
}
