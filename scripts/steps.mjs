// The root commands' shared way to run a step: say what it does, stream its output through.
import { spawn } from "node:child_process"

/** pnpm as the README pins it, through npx, so a fresh machine needs only Node and npm. */
export const pnpm = ["-y", "pnpm@10.34.8"]

/** After this long without output a step says it is still going, so a quiet build never looks hung. */
const QUIET_MS = 10_000

/** Prints a step's heading. */
export function say(line) {
  process.stdout.write(`\n== ${line}\n`)
}

// Colour codes, in case a tool colours its output even through a pipe.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching the ESC character is the point
const ANSI = /\u001b\[[0-9;]*m/g

/**
 * Runs `npx <args>`, streaming its output; each complete output line also goes to `onLine`.
 * With `progress`, the output is held back instead: each line `progress` turns into a string
 * prints that string, and the whole output prints only if the step fails. While nothing has
 * printed for 10 s, a line `… still <doing> (N s)` says the step is alive.
 * Resolves with the exit code (1 when it was killed by a signal).
 */
export function run(args, onLine, { doing = "working", progress } = {}) {
  return new Promise((resolve) => {
    const started = Date.now()
    let lastOutput = started
    const held = []
    const child = spawn("npx", args, { stdio: ["ignore", "pipe", "pipe"] })
    const lineOut = (line) => {
      onLine?.(line)
      const shown = progress?.(line.replace(ANSI, ""))
      if (shown) {
        lastOutput = Date.now()
        process.stdout.write(`${shown}\n`)
      }
    }
    const alive = setInterval(() => {
      const now = Date.now()
      if (now - lastOutput < QUIET_MS) return
      lastOutput = now
      process.stdout.write(`   … still ${doing} (${Math.round((now - started) / 1000)} s)\n`)
    }, 1000)
    for (const [from, to] of [
      [child.stdout, process.stdout],
      [child.stderr, process.stderr],
    ]) {
      let rest = ""
      from.on("data", (chunk) => {
        if (progress) held.push(chunk)
        else {
          lastOutput = Date.now()
          to.write(chunk)
        }
        if (!onLine && !progress) return
        const lines = (rest + chunk.toString("utf8")).split("\n")
        rest = lines.pop() ?? ""
        for (const line of lines) lineOut(line)
      })
      from.on("end", () => {
        if (rest) lineOut(rest)
      })
    }
    child.on("error", (error) => {
      // npx itself missing or not executable: say so instead of a bare stack.
      clearInterval(alive)
      process.stderr.write(`could not start npx (${error.message}); install Node.js 20.19+ with npm\n`)
      resolve(1)
    })
    child.on("close", (code, signal) => {
      clearInterval(alive)
      const exit = code ?? (signal ? 1 : 0)
      if (exit !== 0 && held.length) {
        process.stderr.write("\n-- the step failed; its full output:\n")
        process.stderr.write(Buffer.concat(held))
      }
      resolve(exit)
    })
  })
}
