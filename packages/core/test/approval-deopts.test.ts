import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

/** Runs the fixture under V8's deoptimization trace; returns each deoptimization of core's code. */
async function coreDeopts(): Promise<string[]> {
  const script = fileURLToPath(new URL("./fixtures/approval-deopts.mjs", import.meta.url))
  const dist = fileURLToPath(new URL("../dist/", import.meta.url))
  const args = ["--single-threaded", "--trace-deopt", "--trace-file-names", script]
  const stdout = await new Promise<string>((resolve, reject) =>
    execFile(process.execPath, args, { maxBuffer: 64 << 20 }, (error, out, err) =>
      error ? reject(new Error(err)) : resolve(out),
    ),
  )
  expect(stdout).toContain("DONE")
  const found: string[] = []
  for (const line of stdout.split("\n")) {
    // [bailout (kind: deopt-eager, reason: wrong map): begin. deoptimizing 0x… <JSFunction runTurns <file:///…/dist/index.js> (sfi = …)>, …
    const m =
      /^\[bailout \(kind: [^,]+, reason: ([^)]+)\): begin\. deoptimizing \S+ <JSFunction (\S*) ?<([^>]+)>/.exec(
        line,
      )
    if (m && decodeURI(m[3] as string).includes(dist)) found.push(`${m[2]}: ${m[1]}`)
  }
  return found
}

describe("the approval path under V8's optimizing compiler", () => {
  // The shared bench's S2 row counts 1000 approval runs after a short warm-up, a new client per
  // run; most of what it counted over the floor was TurboFan compiling core, and the loop's
  // largest functions were compiled twice: `Array.prototype.map` makes its result with another
  // elements kind once it is inlined in optimized code, so every optimized reader of a turn's
  // `toolCalls` or tool-result messages failed its map check ("wrong map"); a fresh run's
  // transcript, a copy of an empty `[]`, failed "not a Smi" at its first push; and the entropy
  // pool's refill, a call with no feedback, deoptimized the id paths hundreds of runs in.
  it("deoptimizes none of core's functions in 1500 runs", { timeout: 120_000 }, async () => {
    expect(await coreDeopts()).toEqual([])
  })
})
