// LLM requests and client CPU to resume a sub-agent tree parked at depth 1, 2 and 3.
//
// A tree of depth d is a chain of d handles under the runtime's root: level1 delegates to
// level2 through the `task` tool, …, and the leaf (level d) calls `pay`, which suspends. With
// no `waitFor` anywhere, every level parks and the host's `wait` returns `pending`. One
// answer must then resume the whole chain from the halted calls: the leaf retries `pay` and
// answers, and each parent's halted `task` call reattaches to its child's result and answers —
// exactly d LLM requests (DESIGN §7), none of them a repeat of a finished turn.
//
// Variants (each resume runs alone, one after the other, so CPU per resume is its own):
// - memory: one runtime holds every parked tree; `rt.resume(answer)`.
// - sqlite: each tree is its own runtime saved with `saveRuntime` in one SQLite file;
//   `resumeRuntime(store, key, answer, opts)` restores it from the store, claims the answer,
//   resumes and saves (what a worker process does when the answer arrives).
// - floor: the same number of requests by hand: d parked conversations of the hand-written
//   loop in pay-scenario.mjs, each resumed once (one request each), for the CPU ratio.
//
//   node --expose-gc resume-depth.mjs [--runs 300] [--rounds 3] [--warmup 50] [--only memory|sqlite|floor] [--depths 1,2,3]
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createRuntime } from "@toolnexus/agents"
import { defineTool, pending } from "@toolnexus/core"
import { resumeRuntime, saveRuntime } from "@toolnexus/durable"
import { SqliteStore } from "@toolnexus/durable/sqlite"
import { API_KEY, MODEL, cliOptions, machineLine, median, printRows, startMockServer } from "./harness.mjs"
import { FINAL, MOCK_ARGS, createParkingFloor, payTool, promptOf } from "./pay-scenario.mjs"

const options = cliOptions(
  { runs: 300, rounds: 3, warmup: 50 },
  { variants: ["memory", "sqlite", "floor"], extra: { depths: { type: "string" } } },
)
const depths = (options.values.depths ?? "1,2,3").split(",").map(Number)
if (depths.some((d) => !Number.isInteger(d) || d < 1))
  throw new Error(`bad --depths ${options.values.depths}`)
const maxDepth = Math.max(...depths)

const soulOf = (depth, level) => `You are level ${level} of a chain of ${depth}.`
/** The mock's script: level i (of each chain) delegates to level i+1; the leaf calls pay. */
const script = {}
for (const depth of depths) {
  for (let level = 1; level <= depth; level++) {
    script[soulOf(depth, level)] =
      level < depth
        ? {
            tool: "task",
            arguments: JSON.stringify({ agent: `level${level + 1}`, prompt: "Pay invoice 7 (amount 42)." }),
          }
        : { tool: "pay", arguments: '{"amount":42}' }
  }
}
const server = await startMockServer([...MOCK_ARGS, "--by-system", JSON.stringify(script)])
const llm = { baseUrl: server.baseUrl, style: "openai", apiKey: API_KEY, model: MODEL }
const pay = payTool({ defineTool, pending })

function registryOf(depth) {
  const registry = {}
  for (let level = 1; level <= depth; level++) {
    const name = `level${level}`
    registry[name] = {
      name,
      does: `level ${level} of ${depth}`,
      soul: soulOf(depth, level),
      ...(level < depth ? { team: [`level${level + 1}`] } : { tools: [pay] }),
    }
  }
  return registry
}

/** Parks one tree in `rt`; returns the top handle and the request the host must answer. */
async function parkTree(rt, depth) {
  const top = rt.spawn(rt.root, "level1")
  rt.wake(top, "Pay invoice 7, then confirm.")
  const parked = await rt.wait(top)
  const path = parked.pending?.data?.path
  if (parked.status !== "pending" || !Array.isArray(path) || path.length !== depth + 1) {
    throw new Error(`depth ${depth}: the tree did not park at its leaf: ${JSON.stringify(parked)}`)
  }
  return { top, answer: { id: parked.pending.id, ok: true } }
}

function checkDone(result, depth) {
  if (result.status !== "done" || result.text !== FINAL) {
    throw new Error(`depth ${depth}: the resumed tree did not finish: ${JSON.stringify(result)}`)
  }
}

const variants = {
  /** Returns a function that resumes tree i (all parked beforehand) and checks the outcome. */
  async memory(depth, count) {
    const registry = registryOf(depth)
    const rt = createRuntime({ registry, llm })
    const trees = []
    for (let i = 0; i < count; i++) trees.push(await parkTree(rt, depth))
    return {
      async resume(i) {
        const { top, answer } = trees[i]
        await rt.resume(answer)
        checkDone(await rt.wait(top), depth)
      },
      close: () => rt.close(rt.root),
    }
  },
  async sqlite(depth, count) {
    const dir = mkdtempSync(join(tmpdir(), "tnx-depth-"))
    const store = new SqliteStore({ path: join(dir, "runs.db") })
    const registry = registryOf(depth)
    const trees = []
    for (let i = 0; i < count; i++) {
      const namespace = `tree-${depth}-${i}/`
      const rt = createRuntime({ registry, llm, store, namespace })
      const { top, answer } = await parkTree(rt, depth)
      await saveRuntime(store, namespace, rt)
      await rt.close(rt.root)
      trees.push({ key: namespace, top: top.id, answer })
    }
    return {
      async resume(i) {
        const { key, top, answer } = trees[i]
        const rt = await resumeRuntime(store, key, answer, { registry, llm })
        checkDone(await rt.wait(rt.handle(top)), depth)
      },
      async close() {
        await store.close()
        rmSync(dir, { recursive: true, force: true })
      },
    }
  },
  async floor(depth, count) {
    const floor = createParkingFloor({ baseUrl: server.baseUrl })
    const trees = []
    for (let i = 0; i < count; i++) {
      const levels = []
      for (let level = 0; level < depth; level++) {
        const id = `tree-${i}-${level}`
        const request = await floor.park(id, promptOf(i))
        levels.push({ id, answer: { id: request.id, ok: true } })
      }
      trees.push(levels)
    }
    return {
      async resume(i) {
        for (const { id, answer } of trees[i]) {
          const { text } = await floor.resume(id, answer)
          if (text !== FINAL) throw new Error(`floor: unexpected reply ${text}`)
        }
      },
      close() {},
    }
  },
}

/** Parks `count` trees (not measured), then resumes them one by one (measured). */
async function measure(name, depth, count) {
  const subject = await variants[name](depth, count)
  globalThis.gc?.()
  await server.stats()
  const cpu = process.cpuUsage()
  const started = performance.now()
  for (let i = 0; i < count; i++) await subject.resume(i)
  const wallMs = performance.now() - started
  const { user, system } = process.cpuUsage(cpu)
  const { requests } = await server.stats()
  await subject.close()
  return { requestsPerResume: requests / count, cpuUs: (user + system) / count, wallMs: wallMs / count }
}

const names = Object.keys(variants).filter((n) => options.only === undefined || n === options.only)
for (const name of names) for (const depth of depths) await measure(name, depth, options.warmup)

const samples = new Map()
for (let round = 0; round < options.rounds; round++) {
  const order = round % 2 ? [...names].reverse() : names
  for (const name of order) {
    for (const depth of depths) {
      const sample = await measure(name, depth, options.runs)
      if (sample.requestsPerResume !== depth) {
        throw new Error(
          `${name}, depth ${depth}: ${sample.requestsPerResume} LLM requests per resume, not ${depth}`,
        )
      }
      const key = `${name}/${depth}`
      samples.set(key, [...(samples.get(key) ?? []), sample])
      if (options.verbose) console.log(key, sample)
    }
  }
}
server.close()

console.log(
  `resume a parked sub-agent tree (depth 1–${maxDepth}), ${options.runs} trees per batch, medians of ${options.rounds} rounds`,
)
console.log(machineLine())
const rows = []
for (const name of names) {
  for (const depth of depths) {
    const list = samples.get(`${name}/${depth}`)
    const cpu = median(list.map((s) => s.cpuUs))
    const floor = samples.get(`floor/${depth}`)
    rows.push([
      name,
      depth,
      list[0].requestsPerResume.toFixed(3),
      cpu.toFixed(0),
      (cpu / depth).toFixed(0),
      // Paired: each round's ratio compares batches measured close together; the median of those.
      floor ? `${median(list.map((s, r) => s.cpuUs / floor[r].cpuUs)).toFixed(2)}×` : "—",
      median(list.map((s) => s.wallMs)).toFixed(2),
    ])
  }
}
printRows(
  [
    "variant",
    "depth",
    "LLM requests/resume",
    "CPU µs/resume",
    "CPU µs/request",
    "vs floor",
    "wall ms/resume",
  ],
  rows,
)
