import type { StreamEvent } from "@toolnexus/core"
import { UIChunkWriter } from "./ui-chunk-writer.js"
import type { UIMessageChunk } from "./ui-message-chunk.js"

/** Options of {@link toUIMessageStream}. */
export interface ToUIMessageStreamOptions {
  /** The `start` chunk's `messageId`: the assistant message the chunks build (or continue). */
  messageId?: string
  /**
   * The `errorText` of the `error` chunk a failed run ends with. Default: `<code>: <message>`
   * for a `ToolnexusError`, else `TNX_INTERNAL: internal error`. The values of the API-key
   * environment variables are cut out of whatever it returns.
   */
  onError?: (e: unknown) => string
}

/**
 * Turns a run's events (`client.stream(...)`, or collected from `onEvent`) into the AI SDK's
 * UI message stream (protocol v1): `start`, each model turn between `start-step` and
 * `finish-step`, text/reasoning parts, tool input and output parts, then `finish` with the
 * run's finish reason (`"tool-calls"` when it halted). An approval of a call streamed here
 * becomes `tool-approval-request`; any other non-relay request a `data-toolnexus-request`
 * part. An iterable that throws ends with `error` then `finish {finishReason: "error"}`.
 *
 * @example
 * const stream = toUIMessageStream(client.stream("Refund order 42", { toolkit }))
 * for await (const chunk of stream) console.log(chunk.type)
 */
export function toUIMessageStream(
  events: AsyncIterable<StreamEvent>,
  opts: ToUIMessageStreamOptions = {},
): ReadableStream<UIMessageChunk> {
  const queue: UIMessageChunk[] = []
  const writer = new UIChunkWriter(queue, opts)
  let iterator: AsyncIterator<StreamEvent> | undefined
  return new ReadableStream<UIMessageChunk>({
    start() {
      writer.start()
    },
    async pull(controller) {
      iterator ??= events[Symbol.asyncIterator]()
      while (queue.length === 0 && !writer.ended) {
        try {
          const step = await iterator.next()
          if (step.done) writer.end(undefined)
          else writer.event(step.value)
        } catch (error) {
          writer.fail(error)
        }
      }
      for (const chunk of queue.splice(0)) controller.enqueue(chunk)
      if (writer.ended) controller.close()
    },
    async cancel() {
      await iterator?.return?.()
    },
  })
}
