import { createHash } from "node:crypto"

const MAX = 64

/**
 * @internal The toolkit name of a server's tool: `<server>__<tool>`, with characters outside
 * `[a-zA-Z0-9_-]` replaced by `_`, shortened to 64 characters (keeping a hash of the full name so
 * two long names stay apart) and made unique against `taken` with a numeric suffix.
 */
export function toolNameFor(server: string, tool: string, taken: ReadonlySet<string>): string {
  const full = `${clean(server)}__${clean(tool)}`
  const base = full.length <= MAX ? full : `${full.slice(0, MAX - 9)}_${digest(`${server}\0${tool}`)}`
  let name = base
  for (let n = 2; taken.has(name); n++) name = `${base.slice(0, MAX - String(n).length - 1)}_${n}`
  return name
}

function clean(part: string): string {
  return part.replace(/[^a-zA-Z0-9_-]/g, "_") || "_"
}

function digest(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 8)
}
