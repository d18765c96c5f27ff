import type { ToolResult } from "../types.js"
import { type BuiltinApproval, type BuiltinSpec, fail, messageOf, ok } from "./builtin-env.js"

/** @internal True when `url`'s host is one of `allowHosts` (a `*.x` entry admits x's subdomains). */
export function hostAllowed(url: unknown, allowHosts: readonly string[]): boolean {
  let host: string
  try {
    host = new URL(String(url)).hostname.toLowerCase()
  } catch {
    return false
  }
  return allowHosts.some((entry) => {
    const allowed = entry.toLowerCase()
    return allowed.startsWith("*.") ? host.endsWith(allowed.slice(1)) : host === allowed
  })
}

// Upstream's light HTML-to-text: scripts, styles and tags out, whitespace collapsed.
function textOf(html: string): string {
  return html
    .replace(/<script[\s\S]*?<\/script>/gi, "")
    .replace(/<style[\s\S]*?<\/style>/gi, "")
    .replace(/<[^>]+>/g, "")
    .replace(/[ \t]+\n/g, "\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim()
}

/** @internal `webfetch`: an HTTP GET; its body as text (tags stripped) or html. */
export function webfetchTool(allowHosts: readonly string[]): BuiltinSpec {
  return {
    name: "webfetch",
    description: "HTTP GET a URL and return its body as text, markdown, or html.",
    inputSchema: {
      type: "object",
      properties: {
        url: { type: "string", description: "URL to fetch" },
        format: {
          type: "string",
          enum: ["text", "markdown", "html"],
          description: "Response format (default markdown)",
        },
        timeout: { type: "number", description: "Timeout in seconds (default 30)" },
      },
      required: ["url"],
      additionalProperties: false,
    },
    destructive: (args) => !hostAllowed(args.url, allowHosts),
    async run(args, { signal, fetch, approval }) {
      const url = String(args.url ?? "")
      if (!url) return fail("webfetch: url is required")
      const format = args.format === "text" || args.format === "html" ? args.format : "markdown"
      const timeoutMs = (typeof args.timeout === "number" ? args.timeout : 30) * 1000
      const timeout = AbortSignal.timeout(timeoutMs)
      const deadline = signal ? AbortSignal.any([signal, timeout]) : timeout
      try {
        let at = url
        for (let hop = 0; ; hop++) {
          // Redirects are followed here, so each hop passes allowHosts and approval as the URL did.
          const reply = await fetch(at, { method: "GET", signal: deadline, redirect: "manual" })
          const location = REDIRECTS.has(reply.status) ? reply.headers.get("location") : null
          if (location === null) {
            const body = await reply.text()
            if (!reply.ok) return fail(`HTTP ${reply.status}`, { status: reply.status })
            return ok(format === "html" ? body : textOf(body), { status: reply.status, format })
          }
          await reply.body?.cancel().catch(() => {})
          if (hop >= MAX_REDIRECTS) return fail(`webfetch: more than ${MAX_REDIRECTS} redirects`)
          const next = new URL(location, at).href
          if (!/^https?:$/.test(new URL(next).protocol)) return fail(`webfetch: redirect to ${next} refused`)
          const refused = hopRefusal(approval, { ...args, url: next })
          if (refused) return refused
          at = next
        }
      } catch (error) {
        return fail(`webfetch: ${messageOf(error)}`)
      }
    },
  }
}

const REDIRECTS: ReadonlySet<number> = new Set([301, 302, 303, 307, 308])
const MAX_REDIRECTS = 10

/**
 * A hop to a URL the approval policy asks about: suspends as a call to that URL would, unless
 * this retry answers exactly that request. One answer approves one URL: a retry that was
 * approved for another (the first URL, say) cannot ask again, so it refuses the hop.
 */
function hopRefusal(approval: BuiltinApproval, hopArgs: Record<string, unknown>): ToolResult | undefined {
  if (!approval.asks(hopArgs)) return undefined
  const { request, answer } = approval
  const asked = request?.data?.args as Record<string, unknown> | undefined
  if (answer && request?.data?.tool === "webfetch" && asked?.url === hopArgs.url)
    return answer.ok ? undefined : fail("declined: builtin tool webfetch")
  if (!answer) return approval.ask(hopArgs)
  return fail(`webfetch: redirected to ${String(hopArgs.url)}, which needs its own approval`)
}
