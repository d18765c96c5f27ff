import { type AnswerDecision, ConfigError, type Logger, type RunHost, ToolnexusError } from "@toolnexus/core"
import { Refusal, conflict, refusalOf } from "../internal/http-error.js"
import { allowedOriginsOf, isMediaType, originRefusal } from "../internal/post-checks.js"
import { type HandlerInput, type Reply, fetchHandler } from "../internal/reply.js"
import { confirmPage, decisionText, escapeHtml, htmlPage } from "./page.js"
import { type AnswerLinkSecret, keyOf, verifyToken } from "./token.js"

/** Options of {@link answerLinkHandler}. */
export interface AnswerLinkHandlerOptions {
  /** The host whose requests the links answer (`createStoreHost`, `connectRestate`, …). */
  host: Pick<RunHost, "findRequest" | "getDecision" | "deliverAnswer">
  /**
   * The keys links are checked with, each at least 32 bytes: a link signed by any of them works.
   * To rotate, put the new key first (sign new links with it) and keep the old one until its
   * links have expired.
   */
  secrets: readonly AnswerLinkSecret[]
  /**
   * Origins besides the request's own whose pages may post a decision (e.g. the public
   * `https://…` origin when a proxy serves this over plain http). None by default.
   */
  allowedOrigins?: readonly string[]
  /** Where failures no caller sees are logged (`error`) and refused links noted (`info`). */
  logger?: Logger
}

/** What {@link answerLinkHandler} returns: a Fetch-style handler. */
export interface AnswerLinkHandler {
  /**
   * Serves one request to a link: GET (or HEAD) shows the confirm page, POST decides. Give it
   * to `toNodeListener`, or call it from any Fetch-style server (Hono, Next.js route handlers, Bun).
   */
  fetch(req: Request): Promise<Response>
}

/** Every page: never cached, never framed, never sending its URL (the token) on as a referrer. */
const PAGE_HEADERS = {
  "cache-control": "no-store",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "content-security-policy":
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
}

/** A decline's reason beyond this many characters is cut. */
const MAX_REASON_CHARS = 1_000

/**
 * Serves the links {@link createAnswerLink} makes. GET shows a confirm page naming the request
 * (its prompt, kind, tool and arguments) with Approve and Decline buttons; it decides nothing.
 * The buttons POST an `application/x-www-form-urlencoded` form (`decision=approve|decline`,
 * optional `reason`) from the page's own origin, which decides through `host.deliverAnswer`.
 *
 * Answers are HTML pages, or JSON (`{requestId, decision}`, or `{error: {code, message, …}}`)
 * when `Accept` asks for `application/json` and not HTML:
 * - 200: the page, or the decision just recorded;
 * - 400 `TNX_BAD_REQUEST`: a missing or malformed token, or a post without a valid `decision`;
 * - 403 `TNX_LINK_INVALID`: a token no secret signed; 403 `TNX_CROSS_SITE`: a post from another origin;
 * - 404 `TNX_UNKNOWN_REQUEST`: no such request;
 * - 409 `TNX_ANSWER_CONFLICT` with the first `decision`: the request was decided (by this link
 *   or any other door), so a link is good for one decision;
 * - 410 `TNX_LINK_EXPIRED` (the link) or `TNX_ANSWER_EXPIRED` (an approval after the request's
 *   `expiresAt`); 405 for other methods; 415 for a post of another content type;
 * - 500 `TNX_INTERNAL`: the delivery failed (logged; the page says nothing of why).
 *
 * @param options - `host`, `secrets` (the first signs, all verify), `allowedOrigins`, `logger`.
 * @returns `{ fetch }`.
 * @throws ConfigError for no secrets, a secret shorter than 32 bytes or a bad `allowedOrigins` entry.
 * @example
 * import { createServer } from "node:http"
 * const links = answerLinkHandler({ host, secrets: [process.env.ANSWER_LINK_SECRET!] })
 * createServer(toNodeListener(links.fetch)).listen(3000)
 */
export function answerLinkHandler(options: AnswerLinkHandlerOptions): AnswerLinkHandler {
  const { host, secrets, logger } = options
  if (!Array.isArray(secrets) || secrets.length === 0)
    throw new ConfigError("answerLinkHandler: `secrets` must be a non-empty array (the first one signs)")
  const keys = secrets.map((secret, i) => keyOf(secret, `answerLinkHandler: \`secrets[${i}]\``))
  const allowed = allowedOriginsOf(options.allowedOrigins)

  const serve = async (req: HandlerInput): Promise<Reply> => {
    const json = wantsJson(req.header("accept"))
    const refuse = (refusal: Refusal, title: string, text: string): Reply => {
      if (json) return refusal.toReply({ ...PAGE_HEADERS, ...extraHeadersOf(refusal) })
      return html(refusal.status, title, `<p>${escapeHtml(text)}</p>`, extraHeadersOf(refusal))
    }
    const isGet = req.method === "GET" || req.method === "HEAD"
    if (!isGet && req.method !== "POST")
      return refuse(
        new Refusal(405, "TNX_METHOD_NOT_ALLOWED", "an answer link takes GET and POST only"),
        "Not allowed",
        "Open the link in a browser.",
      )
    const token = new URL(req.url).searchParams.get("token")
    const check =
      token === null ? ({ ok: false, why: "malformed" } as const) : verifyToken(token, keys, Date.now())
    if (!check.ok) {
      logger?.info("answer link refused", { reason: check.why })
      if (check.why === "malformed")
        return refuse(
          badLink("the link's token is missing or malformed"),
          "Broken link",
          "This link is incomplete or damaged.",
        )
      if (check.why === "forged")
        return refuse(
          new Refusal(403, "TNX_LINK_INVALID", "the link's token was not signed by this server"),
          "Invalid link",
          "This link is not valid here.",
        )
      return refuse(
        new Refusal(410, "TNX_LINK_EXPIRED", "the link has expired", { requestId: check.claims?.requestId }),
        "Link expired",
        "This link has expired. Ask for a new one.",
      )
    }
    const { requestId, expiresAt } = check.claims

    let answer: { id: string; ok: boolean; reason?: string } | undefined
    if (!isGet) {
      const refused = originRefusal(req, allowed)
      if (refused !== undefined) return refuse(refused, "Refused", "Decide from the link's own page.")
      const type = req.header("content-type")
      if (!isMediaType(type, "application/x-www-form-urlencoded"))
        return refuse(
          new Refusal(
            415,
            "TNX_UNSUPPORTED_MEDIA_TYPE",
            "the decision must be posted as application/x-www-form-urlencoded",
          ),
          "Refused",
          "Decide from the link's own page.",
        )
      const form = new URLSearchParams(await req.text())
      const decision = form.get("decision")
      if (decision !== "approve" && decision !== "decline")
        return refuse(
          badLink('the form\'s decision must be "approve" or "decline"'),
          "Refused",
          "Choose Approve or Decline.",
        )
      const reason = form.get("reason")?.trim().slice(0, MAX_REASON_CHARS)
      answer =
        decision === "approve"
          ? { id: requestId, ok: true }
          : { id: requestId, ok: false, ...(reason ? { reason } : {}) }
    }

    const decided = await host.getDecision(requestId)
    if (decided !== undefined) return alreadyDecided(requestId, decided)

    if (answer === undefined) {
      const entry = await host.findRequest(requestId)
      if (entry === undefined) return notFound(requestId)
      if (json)
        return jsonReply(200, { request: entry.request, linkExpiresAt: new Date(expiresAt).toISOString() })
      const url = new URL(req.url)
      return {
        status: 200,
        headers: { "content-type": "text/html; charset=utf-8", ...PAGE_HEADERS },
        body: confirmPage(entry.request, url.search, expiresAt),
      }
    }

    try {
      const delivered = await host.deliverAnswer(answer)
      return decidedReply(requestId, delivered.decision)
    } catch (error) {
      const refusal = refusalOf(error)
      if (refusal?.code === "TNX_ANSWER_CONFLICT") {
        // Lost a race with another door: report the decision that won.
        const first =
          (refusal.extra.decision as AnswerDecision | undefined) ?? (await host.getDecision(requestId))
        logger?.info("answer link refused: already decided", { requestId })
        return alreadyDecided(requestId, first)
      }
      if (refusal?.code === "TNX_UNKNOWN_REQUEST") return notFound(requestId)
      if (refusal !== undefined) {
        logger?.info("answer link refused", { requestId, code: refusal.code })
        return refuse(
          refusal,
          "Not recorded",
          refusal.status === 410 ? "This request has expired." : "The answer was not recorded.",
        )
      }
      logger?.error("answer link delivery failed", {
        requestId,
        code: ToolnexusError.isInstance(error) ? error.code : "TNX_INTERNAL",
        error,
      })
      return refuse(
        new Refusal(500, "TNX_INTERNAL", "internal error"),
        "Something went wrong",
        "The answer could not be recorded. Try again later.",
      )
    }

    function alreadyDecided(id: string, decision: AnswerDecision | undefined): Reply {
      const text = decision === undefined ? "already decided" : `already ${decisionText(decision)}`
      return refuse(
        conflict(id, `request ${id} was ${text}`, decision),
        "Already decided",
        `This request was ${text}. Nothing was changed.`,
      )
    }
    function notFound(id: string): Reply {
      return refuse(
        new Refusal(404, "TNX_UNKNOWN_REQUEST", `no open request ${id}`, { requestId: id }),
        "Not found",
        "There is no such request waiting.",
      )
    }
    function decidedReply(id: string, decision: AnswerDecision): Reply {
      if (json) return jsonReply(200, { requestId: id, decision })
      return html(
        200,
        decision.ok ? "Approved" : "Declined",
        `<p>The request was ${escapeHtml(decisionText(decision))}.</p>`,
      )
    }
    function jsonReply(status: number, body: unknown): Reply {
      return {
        status,
        headers: { "content-type": "application/json", ...PAGE_HEADERS },
        body: JSON.stringify(body),
      }
    }
  }
  return { fetch: fetchHandler(serve) }
}

function badLink(message: string): Refusal {
  return new Refusal(400, "TNX_BAD_REQUEST", message)
}

function html(status: number, title: string, body: string, headers: Record<string, string> = {}): Reply {
  return {
    status,
    headers: { "content-type": "text/html; charset=utf-8", ...PAGE_HEADERS, ...headers },
    body: htmlPage(title, body),
  }
}

function extraHeadersOf(refusal: Refusal): Record<string, string> {
  return refusal.status === 405 ? { allow: "GET, HEAD, POST" } : {}
}

/** JSON when the client asks for it and not for HTML (a browser's `Accept` names `text/html`). */
function wantsJson(accept: string | undefined): boolean {
  return accept?.includes("application/json") === true && !accept.includes("text/html")
}
