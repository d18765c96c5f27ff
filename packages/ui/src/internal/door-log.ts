import { type Logger, ToolnexusError } from "@toolnexus/core"
import { errorTextOf } from "./error-text.js"
import type { Refusal } from "./http-error.js"

/**
 * @internal A refused post at `info`: its status and code, the conversation when known, never a
 * stack or the body. A throwing logger is ignored: logging never changes a reply.
 */
export function logRefusal(
  logger: Logger | undefined,
  door: string,
  refusal: Refusal,
  conversationId?: string,
): void {
  if (!logger) return
  try {
    logger.info(`${door} refused ${refusal.status} ${refusal.code}`, {
      status: refusal.status,
      code: refusal.code,
      ...(conversationId !== undefined ? { conversationId } : {}),
    })
  } catch {
    // A logger's own failure must not turn a refusal into a 500.
  }
}

/**
 * @internal A run that failed after its stream started, at `error`: the error's code and the
 * default `<code>: <message>` text with the key environment variables cut out (the same text a
 * stream shows without `onError`); no transcript, no stack.
 */
export function logRunFailure(
  logger: Logger | undefined,
  door: string,
  error: unknown,
  conversationId: string,
): void {
  if (!logger) return
  const code = ToolnexusError.isInstance(error) ? error.code : "TNX_INTERNAL"
  const message = errorTextOf(error, undefined)
  try {
    logger.error(`${door} run failed in conversation ${conversationId}: ${message}`, {
      code,
      conversationId,
    })
  } catch {
    // As above: the stream already carries the error; a broken logger loses only the line.
  }
}
