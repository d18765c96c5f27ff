import { lstatSync, realpathSync } from "node:fs"
import path from "node:path"

/**
 * @internal Resolves `given` against `root` and returns the absolute path, or `undefined` when it
 * leaves the root: after `..`, and after symlinks, judged by the real path of the nearest ancestor
 * that exists (so a link inside the root pointing out of it, or a new file under such a link, is
 * refused before anything is touched).
 */
export function confinePath(realRoot: string, given: string): string | undefined {
  const absolute = path.resolve(realRoot, given)
  if (!inside(realRoot, absolute)) return undefined
  let existing = absolute
  let rest = ""
  for (;;) {
    try {
      const real = realpathSync(existing)
      return inside(realRoot, real) ? (rest ? path.join(real, rest) : real) : undefined
    } catch {
      // A link whose target does not exist could be written through to anywhere.
      if (isLink(existing)) return undefined
      const parent = path.dirname(existing)
      if (parent === existing) return undefined
      rest = rest ? path.join(path.basename(existing), rest) : path.basename(existing)
      existing = parent
    }
  }
}

function isLink(candidate: string): boolean {
  try {
    return lstatSync(candidate).isSymbolicLink()
  } catch {
    return false
  }
}

function inside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate)
  if (relative === "") return true
  return relative !== ".." && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative)
}
