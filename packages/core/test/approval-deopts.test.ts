import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const dist = fileURLToPath(new URL("../dist/", import.meta.url))

/** Runs the fixture under V8's optimization and deoptimization traces; returns its stdout. */
async function traced(): Promise<string> {
  const script = fileURLToPath(new URL("./fixtures/approval-deopts.mjs", import.meta.url))
  const args = ["--single-threaded", "--trace-opt", "--trace-deopt", "--trace-file-names", script]
  const stdout = await new Promise<string>((resolve, reject) =>
    execFile(process.execPath, args, { maxBuffer: 64 << 20 }, (error, out, err) =>
      error ? reject(new Error(err)) : resolve(out),
    ),
  )
  expect(stdout).toContain("DONE")
  return stdout
}

/** Each deoptimization of core's code: `name: reason`. */
function coreDeopts(stdout: string): string[] {
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

/** Each TurboFan compile of core's code (not Maglev's, on Node 22+): its name and the function it was compiled for. */
function coreCompiles(stdout: string): { name: string; sfi: string }[] {
  const found: { name: string; sfi: string }[] = []
  for (const line of stdout.split("\n")) {
    // [completed compiling 0x… <JSFunction runTurns <file:///…/dist/index.js> (sfi = 0x…)> (target TURBOFAN) - took …]
    const m =
      /^\[completed compiling \S+ <JSFunction (\S*) ?<([^>]+)> \(sfi = (\w+)\)> \(target TURBOFAN/.exec(line)
    if (m && decodeURI(m[2] as string).includes(dist))
      found.push({ name: m[1] as string, sfi: m[3] as string })
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
  let stdout: Promise<string> | undefined
  const trace = () => {
    stdout ??= traced()
    return stdout
  }

  it("deoptimizes none of core's functions in 1500 runs", { timeout: 120_000 }, async () => {
    expect(coreDeopts(await trace())).toEqual([])
  })

  // An async function's continuation runs in its own code, so V8 compiles it on its own as well
  // as inlined in its caller: the metric wrapper and the retry loop of every LLM request were
  // compiled twice. They hand back `then` chains now, and nothing is compiled twice.
  // From Node 24, Maglev compiles this path and TurboFan takes one function at most: the
  // count below would be near zero there, so the check runs where TurboFan does the work.
  const maglevFirst = Number(process.versions.node.split(".")[0]) >= 24
  it.skipIf(maglevFirst)(
    "compiles each function once, and neither the metric wrapper nor the retry loop on its own",
    {
      timeout: 120_000,
    },
    async () => {
      const compiles = coreCompiles(await trace())
      expect(compiles.length).toBeGreaterThan(5)
      const twice = compiles.filter((c, i) => compiles.findIndex((d) => d.sfi === c.sfi) !== i)
      expect(twice.map((c) => c.name)).toEqual([])
      const names = compiles.map((c) => c.name)
      expect(names).not.toContain("measuredCall")
      expect(names).not.toContain("withRetries")
    },
  )
})
