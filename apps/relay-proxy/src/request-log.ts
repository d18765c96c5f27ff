import { createHash } from "node:crypto"

/** What {@link withRequestLog} needs: the caller keys' names, and where lines go. */
export interface RequestLogOptions {
  /** Caller key → its name; the key itself is never written. */
  keyNames?: ReadonlyMap<string, string>
  write?: (line: string) => void
  now?: () => number
}

/**
 * Wraps a fetch handler so that every request writes one line when its response is ready:
 * `<method> <path> <status> <ms>ms caller=<key name>` — `caller=-` without a key, and
 * `caller=unknown` for a key that is not configured. Keys are matched by digest and never
 * logged; the query string is left out (it may carry anything).
 */
export function withRequestLog(
  handler: (req: Request) => Response | Promise<Response>,
  {
    keyNames,
    write = (line) => process.stdout.write(`${line}\n`),
    now = () => performance.now(),
  }: RequestLogOptions = {},
): (req: Request) => Promise<Response> {
  const digest = (key: string) => createHash("sha256").update(key).digest("hex")
  const names = new Map([...(keyNames ?? [])].map(([key, name]) => [digest(key), name]))
  return async (req) => {
    const started = now()
    let status = 500
    try {
      const res = await handler(req)
      status = res.status
      return res
    } finally {
      const presented = /^Bearer\s+(.+)$/i.exec(req.headers.get("authorization")?.trim() ?? "")?.[1]
      const caller = presented === undefined ? "-" : (names.get(digest(presented)) ?? "unknown")
      const path = new URL(req.url).pathname
      write(`${req.method} ${path} ${status} ${Math.round(now() - started)}ms caller=${caller}`)
    }
  }
}
