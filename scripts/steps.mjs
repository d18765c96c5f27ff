// The root commands' shared way to run a step: say what it does, stream its output through.
import { spawn } from "node:child_process"

/** pnpm as the README pins it, through npx, so a fresh machine needs only Node and npm. */
export const pnpm = ["-y", "pnpm@10.34.8"]

/** Prints a step's heading. */
export function say(line) {
  process.stdout.write(`\n== ${line}\n`)
}

/**
 * Runs `npx <args>`, streaming its output; each complete output line also goes to `onLine`.
 * Resolves with the exit code (1 when it was killed by a signal).
 */
export function run(args, onLine) {
  return new Promise((resolve) => {
    const child = spawn("npx", args, { stdio: ["ignore", "pipe", "pipe"] })
    for (const [from, to] of [
      [child.stdout, process.stdout],
      [child.stderr, process.stderr],
    ]) {
      let rest = ""
      from.on("data", (chunk) => {
        to.write(chunk)
        if (!onLine) return
        const lines = (rest + chunk.toString("utf8")).split("\n")
        rest = lines.pop() ?? ""
        for (const line of lines) onLine(line)
      })
      from.on("end", () => {
        if (onLine && rest) onLine(rest)
      })
    }
    child.on("close", (code, signal) => resolve(code ?? (signal ? 1 : 0)))
  })
}
