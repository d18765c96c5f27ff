import { type BuiltinSpec, fail, messageOf, ok } from "./builtin-env.js"

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
    async run(args, { signal, fetch }) {
      const url = String(args.url ?? "")
      if (!url) return fail("webfetch: url is required")
      const format = args.format === "text" || args.format === "html" ? args.format : "markdown"
      const timeoutMs = (typeof args.timeout === "number" ? args.timeout : 30) * 1000
      const timeout = AbortSignal.timeout(timeoutMs)
      try {
        const reply = await fetch(url, {
          method: "GET",
          signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
        })
        const body = await reply.text()
        if (!reply.ok) return fail(`HTTP ${reply.status}`, { status: reply.status })
        return ok(format === "html" ? body : textOf(body), { status: reply.status, format })
      } catch (error) {
        return fail(`webfetch: ${messageOf(error)}`)
      }
    },
  }
}
