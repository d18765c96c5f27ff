import type { LiveRun } from "./live-run.js"

/**
 * @internal A request as the handlers' logic reads it, from either edge: a Fetch `Request`, or
 * `toNodeListener`'s `IncomingMessage` with its body already read.
 */
export interface HandlerInput {
  readonly method: string
  /** The absolute URL. */
  readonly url: string
  /** The request's own origin (scheme and host), what a same-origin page's `Origin` header says. */
  readonly origin: string
  /** A request header by lower-case name, `undefined` when absent. */
  header(name: string): string | undefined
  /** The whole body as text. */
  text(): Promise<string>
  /** The request as a Fetch `Request`, for `conversationId` (the Node edge builds it only when asked). */
  request(): Request
}

/**
 * @internal What the logic answers, before an edge writes it: a fixed body (a JSON refusal, a
 * one-event stream, a 204), a live run's SSE frames, or a `Response` sent as is (`conversationId`'s).
 */
export type Reply =
  | { status: number; headers: Record<string, string>; body: string | null }
  // `never`: an edge only reads a live run's frames (serialised already), whatever its items.
  | { status: number; headers: Record<string, string>; live: LiveRun<never> }
  | Response

/** @internal The protocol logic of a handler, behind both edges. */
export type HandlerLogic = (input: HandlerInput) => Promise<Reply>

// Module-local, not Symbol.for: a handler of another copy of this package takes the Fetch path.
const LOGIC = Symbol("toolnexus.ui.logic")

/**
 * @internal The Fetch edge of `logic`: a `(req: Request) => Promise<Response>` that carries
 * `logic` for `toNodeListener`, which then skips the Fetch objects.
 */
export function fetchHandler(logic: HandlerLogic): (req: Request) => Promise<Response> {
  const handler = async (req: Request): Promise<Response> =>
    responseOf(
      await logic({
        method: req.method,
        url: req.url,
        get origin() {
          return new URL(req.url).origin
        },
        header: (name) => req.headers.get(name) ?? undefined,
        text: () => req.text(),
        request: () => req,
      }),
    )
  return Object.assign(handler, { [LOGIC]: logic })
}

/** @internal The logic behind a handler made by `fetchHandler`, else `undefined`. */
export function logicOf(handler: unknown): HandlerLogic | undefined {
  return (handler as { [LOGIC]?: HandlerLogic })[LOGIC]
}

function responseOf(reply: Reply): Response {
  if (reply instanceof Response) return reply
  const body = "live" in reply ? reply.live.sse() : reply.body
  return new Response(body, { status: reply.status, headers: reply.headers })
}
