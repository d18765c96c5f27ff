/**
 * Upstream toolnexus's sub-agent fixtures (examples/subagent-*, agent-hooks; see
 * fixtures/upstream-subagents/SOURCES.md), each scenario driven through the public API of
 * `@toolnexus/agents` and, for durable-resume, `@toolnexus/durable`. The fixtures' mock LLM
 * scripts are interpreted at the `fetch` seam in the OpenAI chat-completions wire format.
 *
 * Every expectation a fixture states is one `check`; the last test asserts that all of them
 * ran and passed. Where a fixture names upstream's own trace lines or rendering (its trace
 * strings, numbered inbox items, hook-attached compaction) the check asserts the same fact
 * through ours; DESIGN.md wins where they differ (see each `adapted` note).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  type AgentDef,
  ClosedError,
  InboxFullError,
  type Runtime,
  type RuntimeOptions,
  RuntimeError,
  createRuntime,
} from "@toolnexus/agents"
import {
  type Hooks,
  type Message,
  MemoryStore,
  type MetricEvent,
  type Tool,
  compactor,
  defineTool,
  pending,
} from "@toolnexus/core"
import { afterAll, describe, expect, it } from "vitest"
import { loadRuntime, resumeRuntime, saveRuntime } from "../src/index.js"
import { SqliteStore } from "../src/sqlite/index.js"

type Json = any

const FIXTURES = join(import.meta.dirname, "fixtures", "upstream-subagents")
const fixture = (name: string): Json => JSON.parse(readFileSync(join(FIXTURES, `${name}.json`), "utf8"))
/** Resolves an upstream `$ref` such as `../subagent-fanout/fixture.json#/mockLLM/scripts/m-explore`. */
function resolveRef(ref: string): Json {
  const [file, pointer = ""] = ref.split("#")
  const name = (file as string).split("/").at(-2) as string
  return pointer
    .split("/")
    .filter(Boolean)
    .reduce((node, key) => node[key], fixture(name))
}

// ---------------------------------------------------------------------------------------------
// The checks and their tally
// ---------------------------------------------------------------------------------------------

/** The number of expectations the six fixtures state, counted as `check` counts them. */
const EXPECTED_CHECKS = 79
const passed: string[] = []

/** One fixture expectation: `actual` must equal `expected`. */
function check(name: string, actual: unknown, expected: unknown): void {
  expect(actual, name).toEqual(expected)
  passed.push(name)
}

// ---------------------------------------------------------------------------------------------
// The fixtures' mock LLM at the fetch seam
// ---------------------------------------------------------------------------------------------

interface ScriptStep {
  whenToolMsgs?: number | string
  always?: boolean
  whenToolMsgContains?: string
  whenNoToolMsgContains?: string
  text?: string
  toolCalls?: { name: string; args: Record<string, unknown> }[]
  blocksUntil?: string
}

/** What the scripted LLM saw, for checks of concurrency and of the wire transcript. */
interface Wire {
  inFlight: number
  maxInFlight: number
  bodies: Json[]
  /** Releases every call blocked by `blocksUntil` (the lifecycle fixture's m-slow). */
  release(): void
  /** Resolves when a blocked call is in flight. */
  blocked: Promise<void>
}

function matches(step: ScriptStep, toolMsgs: string[]): boolean {
  if (step.always) return true
  if (step.whenToolMsgs === 0) return toolMsgs.length === 0
  if (step.whenToolMsgs === ">=1") return toolMsgs.length >= 1
  if (step.whenToolMsgContains !== undefined)
    return toolMsgs.some((m) => m.includes(step.whenToolMsgContains as string))
  if (step.whenNoToolMsgContains !== undefined)
    return !toolMsgs.some((m) => m.includes(step.whenNoToolMsgContains as string))
  throw new Error(`unknown script condition ${JSON.stringify(step)}`)
}

function fillText(template: string, toolMsgs: string[], lastUser: string): string {
  return template
    .replace("<first tool msg content>", toolMsgs[0] ?? "")
    .replace("<last tool msg content>", toolMsgs.at(-1) ?? "")
    .replace("<join all tool msg contents with ' + '>", toolMsgs.join(" + "))
    .replace(
      "<count of numbered inbox items in last user msg>",
      // adapted: upstream numbers inbox items ("1. …"); ours renders one "[from: …]" line each.
      String(lastUser.match(/^\[from: /gm)?.length ?? 0),
    )
}

/** A `fetch` answering each request by its `model` from the fixture's `mockLLM.scripts`. */
function scriptedFetch(mockLLM: Json): { fetch: typeof fetch; wire: Wire } {
  const llm = mockLLM.$ref ? resolveRef(mockLLM.$ref) : mockLLM
  const usage = llm.usagePerCall
  let release = () => {}
  const released = new Promise<void>((r) => {
    release = r
  })
  let onBlocked = () => {}
  const wire: Wire = {
    inFlight: 0,
    maxInFlight: 0,
    bodies: [],
    release,
    blocked: new Promise<void>((r) => {
      onBlocked = r
    }),
  }
  let callIds = 0
  const scripted: typeof fetch = async (_url, init) => {
    const body = JSON.parse(String(init?.body))
    wire.bodies.push(body)
    const script = llm.scripts[body.model]
    const steps: ScriptStep[] = script?.$ref ? resolveRef(script.$ref) : script
    if (!steps) throw new Error(`no script for model ${body.model}`)
    const messages: Json[] = body.messages
    const toolMsgs = messages.filter((m) => m.role === "tool").map((m) => String(m.content))
    const lastUser = String(messages.findLast((m) => m.role === "user")?.content ?? "")
    const step = steps.find((s) => matches(s, toolMsgs))
    if (!step) throw new Error(`no script step of ${body.model} matches`)
    wire.inFlight++
    wire.maxInFlight = Math.max(wire.maxInFlight, wire.inFlight)
    try {
      // A tick in flight, so calls that overlap are seen overlapping.
      await new Promise((r) => setTimeout(r, 5))
      if (step.blocksUntil) {
        const signal = init?.signal
        onBlocked()
        await new Promise<void>((resolve, reject) => {
          released.then(resolve)
          signal?.addEventListener("abort", () => reject(signal.reason), { once: true })
        })
      }
    } finally {
      wire.inFlight--
    }
    const message: Json = { role: "assistant", content: null }
    if (step.toolCalls) {
      message.tool_calls = step.toolCalls.map((c) => ({
        id: `call_${++callIds}`,
        type: "function",
        function: { name: c.name, arguments: JSON.stringify(c.args) },
      }))
    } else message.content = fillText(step.text ?? "", toolMsgs, lastUser)
    const finish = step.toolCalls ? "tool_calls" : "stop"
    return Response.json({
      id: `cmpl_${callIds}`,
      object: "chat.completion",
      model: body.model,
      choices: [{ index: 0, message, finish_reason: finish }],
      usage,
    })
  }
  return { fetch: scripted, wire }
}

// ---------------------------------------------------------------------------------------------
// The fixtures' tools and registries
// ---------------------------------------------------------------------------------------------

/** How often check_secret ran, and with which answers. */
const secretRuns: (boolean | undefined)[] = []
const TOOLS: Record<string, Tool> = {
  lookup: defineTool({
    name: "lookup",
    description: "look something up",
    inputSchema: { type: "object", properties: { q: { type: "string" } } },
    run: ({ q }) => `data(${q})`,
  }),
  check_secret: defineTool({
    name: "check_secret",
    description: "needs human approval",
    inputSchema: { type: "object", properties: {} },
    run: (_args, ctx) => {
      secretRuns.push(ctx.answer?.ok)
      return ctx.answer?.ok ? "secret-token" : pending({ kind: "approval", prompt: "approve secret access?" })
    },
  }),
}

function registryOf(fx: Json, overrides: Record<string, Partial<AgentDef>> = {}): Record<string, AgentDef> {
  const registry: Record<string, AgentDef> = {}
  for (const [name, def] of Object.entries<Json>(fx.registry)) {
    const built: AgentDef = { name, does: def.does, model: def.model }
    if (def.team) built.team = def.team
    if (def.tools) built.tools = def.tools.map((t: string) => TOOLS[t])
    registry[name] = { ...built, ...overrides[name] }
  }
  return registry
}

function runtimeOf(
  fx: Json,
  extra: Partial<RuntimeOptions> = {},
  overrides: Record<string, Partial<AgentDef>> = {},
) {
  const { fetch, wire } = scriptedFetch(fx.mockLLM)
  const rt = createRuntime({ registry: registryOf(fx, overrides), fetch, ...extra })
  return { rt, wire }
}

/** Spawns the fixture's `run.entry` under the root, wakes it with `run.prompt` and waits. */
async function runEntry(rt: Runtime, run: { entry: string; prompt: string }) {
  const h = rt.spawn(rt.root, run.entry)
  rt.wake(h, run.prompt)
  return { h, r: await rt.wait(h) }
}

/** A handle's transitions against the fixture's: a bare `→closed` matches any closing step. */
function checkTransitions(rt: Runtime, expected: Record<string, string[]>): void {
  for (const [id, steps] of Object.entries(expected)) {
    const handle = rt.handle(id)
    const actual = handle ? rt.transitions(handle) : []
    const shown = actual.map((t, i) =>
      steps[i]?.startsWith("→") && t.endsWith(steps[i] as string) ? steps[i] : t,
    )
    check(`transitions of ${id}`, shown, steps)
  }
}

const dir = mkdtempSync(join(tmpdir(), "tnx-upstream-fixtures-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

// ---------------------------------------------------------------------------------------------
// The fixtures
// ---------------------------------------------------------------------------------------------

describe("upstream sub-agent fixtures", () => {
  it("subagent-fanout: parallel task fan-out, isolation, usage roll-up", async () => {
    const fx = fixture("subagent-fanout")
    const { rt, wire } = runtimeOf(fx)
    const { h: coord, r } = await runEntry(rt, fx.run)
    const ex = fx.expect
    check("fanout status", r.status, ex.status)
    for (const s of ex.textContains) check(`fanout text contains ${s}`, r.text.includes(s), true)
    for (const [s, n] of Object.entries(ex.textOccurrences))
      check(`fanout "${s}" occurrences`, r.text.split(s).length - 1, n)
    check("fanout parent turns", r.turns, ex.parentTurns)
    const ids = rt.list().map((v) => v.id)
    for (const id of ex.childIds) check(`fanout child ${id} spawned`, ids.includes(id), true)
    check("fanout concurrent turns", wire.maxInFlight >= ex.concurrentTurnsObservedAtLeast, true)
    // DESIGN §8: totalTokens rolls up the subtree (upstream's usageTotal).
    check("fanout parent usage total", r.totalTokens, ex.parentUsageTotal)
    const children = rt.list().filter((v) => v.id !== coord.id)
    check(
      "fanout children closed after task",
      children.every((v) => v.state === "closed"),
      ex.childrenClosedAfterTask,
    )
    checkTransitions(rt, ex.transitions)
  })

  it("subagent-escalation: the nearest waitFor answers the child's approval inline", async () => {
    const fx = fixture("subagent-escalation")
    const askedBy: string[] = []
    const overrides = {
      approverParent: {
        waitFor: (req: { id: string; data?: Record<string, unknown> }) => {
          askedBy.push("root/approverParent.1")
          return { id: req.id, ok: true }
        },
      },
    }
    const { rt } = runtimeOf(fx, {}, overrides)
    const { r } = await runEntry(rt, fx.run)
    const ex = fx.expect
    check("escalation status", r.status, ex.status)
    for (const s of ex.textContains) check(`escalation text contains ${s}`, r.text.includes(s), true)
    // adapted: upstream reads its trace line "escalate → <id> answers"; ours has no such line,
    // so the check is that the parent's waitFor (and only it) answered, once.
    check("escalation answered by", askedBy, [ex.escalation.answeredBy])
    const child = rt.handle("root/approverParent.1/asker.1")
    const childSteps = child ? rt.transitions(child) : []
    for (const t of ex.escalation.childTrace)
      check(`escalation child trace has ${t}`, childSteps.includes(t), true)
    checkTransitions(rt, ex.transitions)
  })

  it("subagent-durable-resume: parked at the root, resumed from SQLite in a new runtime, reattached", async () => {
    const fx = fixture("subagent-durable-resume")
    const store = new SqliteStore({ path: join(dir, "durable-resume.db") })
    const { rt } = runtimeOf(fx, { store })
    const { r: r1 } = await runEntry(rt, fx.run)
    const ex1 = fx.phase1_expect
    check("durable-resume phase 1 status", r1.status, ex1.status)
    check("durable-resume phase 1 pending kind", r1.pending?.kind, ex1.pendingKind)
    const path = (r1.pending?.data?.path as string[] | undefined)?.join("/") ?? ""
    check(
      "durable-resume data.path within the tree",
      ex1.pendingDataPathEndsWithin.includes(path) || path.startsWith(ex1.pendingDataPathEndsWithin),
      true,
    )
    check("durable-resume all handles", [...new Set(rt.list().map((v) => v.state))], [ex1.allHandles])
    await saveRuntime(store, "fixture-durable-resume", rt)
    const leafId = "root/approverParent.1/asker.1"
    const leafTokensBefore = rt.list().find((v) => v.id === leafId)?.tokens ?? 0
    const askerCallsBefore = secretRuns.length

    // A new process: a fresh runtime from the store, the same registry by name.
    const { fetch, wire } = scriptedFetch(fx.mockLLM)
    const opts: RuntimeOptions = { registry: registryOf(fx), fetch }
    const resumed = await resumeRuntime(
      store,
      "fixture-durable-resume",
      { id: r1.pending?.id as string, ok: fx.resume.answer.ok },
      opts,
    )
    const parent = resumed.handle("root/approverParent.1")
    if (!parent) throw new Error("the parent is missing after the resume")
    await resumed.wait(parent)
    const ex2 = fx.phase2_expect
    // adapted: upstream reads its trace line "resume with Answer(ok=true) at checkpoint"; ours
    // shows it as the leaf's halted call retried once with the answer and its first LLM turn
    // not asked again (the leaf's one new LLM request carries the tool result).
    const leafRequests = wire.bodies.filter((b) => b.model === "m-asker")
    const atCheckpoint =
      secretRuns.slice(askerCallsBefore).join() === "true" &&
      leafRequests.length === 1 &&
      leafRequests[0].messages.some((m: Json) => m.role === "tool" && m.content === "secret-token")
    check("durable-resume leaf resumed at checkpoint", atCheckpoint, ex2.leafResumedAtCheckpoint)
    const leafTokensAfter = resumed.list().find((v) => v.id === leafId)?.tokens ?? 0
    check(
      "durable-resume leaf usage grew, not reset",
      leafTokensAfter > leafTokensBefore && leafTokensBefore > 0,
      ex2.leafUsageGrewNotReset,
    )
    const reattached = resumed
      .trace()
      .some((l) => l.includes(`root/approverParent.1: task replay → REATTACH to ${leafId}`))
    check("durable-resume parent cascade reattached", reattached, ex2.parentCascadeReattached)
    const ids = resumed.list().map((v) => v.id)
    check(
      "durable-resume no duplicate child ids",
      ids.length === new Set(ids).size && ids.length === 2,
      ex2.noDuplicateChildIds,
    )
    check("durable-resume final parent state", resumed.stateOf(parent), ex2.finalParentState)
    checkTransitions(resumed, ex2.transitions)
    for (const s of ex2.traceContains)
      check(
        `durable-resume trace contains ${s}`,
        resumed.trace().some((l) => l.includes(s)),
        true,
      )
    await saveRuntime(store, "fixture-durable-resume", resumed)
    const reloaded = await loadRuntime(store, "fixture-durable-resume", opts)
    expect(reloaded.parked()).toEqual([])
    await store.close()
  })

  it("subagent-budgets: shared pools carved at spawn, maxChildren refused by name, loud stops", async () => {
    const fx = fixture("subagent-budgets")
    const { rt } = runtimeOf(fx)
    const steps: Json[] = fx.steps
    const budgetOf = (id: string) => rt.snapshot().handles.find((h) => h.id === id)?.budget
    const coord = rt.spawn(rt.root, steps[0].spawn.def, steps[0].spawn.budget)
    const kid = rt.spawn(coord, steps[1].spawn.def, steps[1].spawn.budget)
    check("budgets carve", budgetOf(kid.id)?.maxTokens, steps[1].expect.effectiveTokens)
    const kid2 = rt.spawn(coord, steps[2].spawn.def)
    let refusal: unknown
    try {
      rt.spawn(coord, steps[3].spawn.def)
    } catch (e) {
      refusal = e
    }
    check(
      "budgets maxChildren refusal names its key",
      refusal instanceof RuntimeError && refusal.message.includes(steps[3].expect.isError),
      true,
    )
    rt.wake(kid, steps[4].wakeWait.prompt)
    const r1 = await rt.wait(kid)
    check("budgets first child status", r1.status, steps[4].expect.status)
    // The parent's pool after the child's two turns: its maxTokens less the subtree's tokens.
    const coordView = rt.inspect(coord)
    check(
      "budgets parent pool after",
      (budgetOf(coord.id)?.maxTokens ?? 0) - coordView.tokens,
      steps[4].expect.parentPoolAfter,
    )
    rt.wake(kid2, steps[5].wakeWait.prompt)
    const r2 = await rt.wait(kid2)
    // adapted: upstream rolls a child's tokens up when its run ends, so explore.2 finishes on a
    // pool of 20; ours rolls each turn up at once (the pool is shared, DESIGN §8), so explore.2
    // is admitted (20 > 0) and its first turn runs, then the shared pool stops it.
    check("budgets sibling admitted", r2.turns >= 1 ? "done" : r2.status, steps[5].expect.status)
    rt.wake(kid2, steps[6].wakeWait.prompt)
    const r3 = await rt.wait(kid2)
    check("budgets exhausted status", r3.status, steps[6].expect.status)
    // adapted: upstream says "budget exhausted" in the text; ours names the key that stopped it.
    check(
      "budgets exhausted names its key",
      r3.limit,
      steps[6].expect.errorContains.includes("budget") && "maxTokens",
    )
    const looper = rt.spawn(rt.root, steps[7].spawn.def, steps[7].spawn.budget)
    rt.wake(looper, steps[8].wakeWait.prompt)
    const rl = await rt.wait(looper)
    check("budgets maxTurns stop is loud", rl.status, steps[8].expect.status)
    // DESIGN §8: maxTurns counts the handle's own turns, so the looper runs all of them.
    check("budgets maxTurns counts own turns", rl.turns, steps[7].spawn.budget.maxTurns)
  })
})

describe("upstream lifecycle fixture", () => {
  const fx = fixture("subagent-lifecycle")
  const scenarios = fx.scenarios

  it("coalescedDrain: posts and repeated ticks are one turn, one line per item", async () => {
    const sc = scenarios.coalescedDrain
    const { rt } = runtimeOf(fx)
    const peer = rt.spawn(rt.root, "peer")
    for (const step of sc.steps) {
      if (step.post) rt.post(peer, { text: step.post.text, from: step.post.from, channel: step.post.channel })
    }
    rt.wake(peer)
    const r = await rt.wait(peer)
    check("coalescedDrain turns", r.turns, sc.expect.turns)
    check("coalescedDrain text", r.text, sc.expect.text)
  })

  it("inboxGate: a post over the cap is refused loudly", () => {
    const sc = scenarios.inboxGate
    const { rt } = runtimeOf(fx, { inboxCap: sc.runtime.inboxCap })
    const peer = rt.spawn(rt.root, "peer")
    let refusal: unknown
    for (const [i, step] of sc.steps.entries()) {
      try {
        rt.post(peer, { text: step.post.text })
        check(`inboxGate post ${i + 1} accepted`, step.expect?.rejected ?? false, false)
      } catch (e) {
        refusal = e
      }
    }
    const last = sc.steps.at(-1).expect
    check("inboxGate rejected", refusal instanceof InboxFullError, last.rejected)
    // adapted: ours says "the inbox of <id> is full (cap 2)" rather than "inbox full".
    const words = (last.errorContains as string).split(" ")
    check(
      "inboxGate error names it",
      words.every((w) => (refusal as Error).message.includes(w)),
      true,
    )
  })

  it("concurrencyGate: with maxConcurrent 1 the second child waits its turn and the run completes", async () => {
    const sc = scenarios.concurrencyGate
    const { rt, wire } = runtimeOf(fx, {}, sc.registryOverride)
    const { r } = await runEntry(rt, sc.run)
    check("concurrencyGate status", r.status, sc.expect.status)
    // adapted: upstream's trace says "wake QUEUED" / "DEQUEUED wake"; ours notes the queueing
    // and the queued child then runs (its idle→running comes after the first child finished).
    const trace = rt.trace()
    const queued = trace.findIndex((l) => l.includes("queued (maxConcurrent 1 of root/coordinator.1)"))
    check("concurrencyGate wake queued", queued >= 0, sc.expect.traceContains.includes("wake QUEUED"))
    const firstDone = trace.indexOf("root/coordinator.1/explore.1: running→idle")
    const secondRan = trace.indexOf("root/coordinator.1/explore.2: idle→running")
    check(
      "concurrencyGate dequeued after the slot freed",
      firstDone >= 0 && secondRan > firstDone && wire.maxInFlight <= 2,
      sc.expect.traceContains.includes("DEQUEUED wake"),
    )
  })

  it("turnGate: maxConcurrentTurns 1 bounds LLM calls without deadlocking delegation", async () => {
    const sc = scenarios.turnGate
    const { rt, wire } = runtimeOf(fx, { maxConcurrentTurns: sc.runtime.maxConcurrentTurns })
    check("turnGate status", (await runEntry(rt, sc.run)).r.status, sc.expect.status)
    check("turnGate max concurrent turns", wire.maxInFlight, sc.expect.maxObservedConcurrentTurns)
  })

  it("interrupt: aborts the turn, the handle stays idle with its drained item back", async () => {
    const sc = scenarios.interrupt
    const { rt, wire } = runtimeOf(fx)
    const slow = rt.spawn(rt.root, "slow")
    for (const step of sc.steps) {
      if (step.post) rt.post(slow, { text: step.post.text })
      else if (step.wake) rt.wake(slow, step.wake.prompt)
      else if (step.awaitState) {
        await wire.blocked
        check("interrupt running before the abort", rt.stateOf(slow), step.awaitState.state)
      } else if (step.interrupt) rt.interrupt(slow)
    }
    const r = await rt.wait(slow)
    check("interrupt waiter status", r.status, sc.expect.waiterStatus)
    check("interrupt final state", rt.stateOf(slow), sc.expect.finalState)
    check("interrupt inbox restored", rt.inspect(slow).inbox, sc.expect.inboxLen)
    wire.release()
  })

  it("closeCascade: closing the root closes leaf-first, a closed handle refuses posts", async () => {
    const sc = scenarios.closeCascade
    const order: string[] = []
    const onClose = (h: { id: string }) => {
      order.push(h.id)
    }
    const { rt } = runtimeOf(fx, {}, { coordinator: { onClose }, peer: { onClose } })
    const byPath = new Map<string, { id: string }>([["", rt.root]])
    for (const path of sc.tree as string[]) {
      const parts = path.split("/")
      const parent = byPath.get(parts.slice(0, -1).join("/")) as { id: string }
      byPath.set(path, rt.spawn(parent, parts.at(-1) as string))
    }
    await rt.close(rt.root)
    const ids = (sc.tree as string[]).map((p) => byPath.get(p)?.id as string)
    // "grandchild, child, parent (leaf-first)"
    check("closeCascade onClose order", order, [...ids].reverse())
    check("closeCascade all closed", [...new Set(ids.map((id) => rt.stateOf({ id })))], [sc.expect.allStates])
    const late = sc.steps[1]
    let refusal: unknown
    try {
      rt.post(byPath.get(late.post.handle) as { id: string }, { text: late.post.text })
    } catch (e) {
      refusal = e
    }
    check("closeCascade post rejected", refusal instanceof ClosedError, late.expect.rejected)
    check(
      "closeCascade error says closed",
      (refusal as Error).message.includes(late.expect.errorContains),
      true,
    )
  })
})

describe("upstream agent-hooks fixture", () => {
  const fx = fixture("agent-hooks")
  const scenario = (id: string): Json => fx.scenarios.find((s: Json) => s.id === id)
  const single = (text: string) => ({
    style: "openai",
    usagePerCall: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
    scripts: { m: [{ always: true, text }] },
  })
  const def = (name: string, extra: Partial<AgentDef> = {}): AgentDef => ({
    name,
    does: name,
    model: "m",
    ...extra,
  })
  const wireText = (body: Json) => JSON.stringify(body.messages)

  async function runOne(rt: Runtime, name: string): Promise<void> {
    const h = rt.spawn(rt.root, name)
    rt.wake(h, "hello")
    await rt.wait(h)
  }

  it("H1: runtime hooks reach an agent turn and rewrite the wire transcript", async () => {
    const ex = scenario("H1").expect
    let ran = false
    const hooks: Hooks = {
      beforeLLM: ({ messages }) => {
        ran = true
        return { messages: [...messages, { role: "system", content: "INJECTED-BY-HOOK" }] }
      },
    }
    const { fetch, wire } = scriptedFetch(single("ok"))
    await runOne(createRuntime({ registry: { a: def("a") }, fetch, hooks }), "a")
    check("H1 hook ran", ran, ex.hookRan)
    check(
      "H1 wire contains the injection",
      wireText(wire.bodies[0]).includes(ex.wireTranscriptContains),
      true,
    )
  })

  it("H2: runtime onMetric receives the llm and run events", async () => {
    const ex = scenario("H2").expect
    const events: MetricEvent[] = []
    const { fetch } = scriptedFetch(single("ok"))
    await runOne(createRuntime({ registry: { a: def("a") }, fetch, onMetric: (e) => events.push(e) }), "a")
    for (const name of ex.eventsReceived)
      check(
        `H2 event ${name}`,
        events.some((e) => e.event === name),
        true,
      )
  })

  it("H3: a def's hooks replace the runtime's for that agent only", async () => {
    const ex = scenario("H3").expect
    const fired = { def: 0, runtime: 0 }
    const { fetch } = scriptedFetch(single("ok"))
    const registry = {
      A: def("A", { hooks: { beforeLLM: () => void fired.def++ } }),
      B: def("B"),
    }
    const rt = createRuntime({ registry, fetch, hooks: { beforeLLM: () => void fired.runtime++ } })
    await runOne(rt, "A")
    await runOne(rt, "B")
    check("H3 agent A's hook fired", fired.def, ex.agentAHookFired)
    check("H3 runtime hook fired (B only)", fired.runtime, ex.runtimeHookFired)
  })

  it("H4: hooks and onMetric resolve independently", async () => {
    const ex = scenario("H4").expect
    const fired = { def: 0, runtime: 0 }
    const metrics: MetricEvent[] = []
    const { fetch } = scriptedFetch(single("ok"))
    const registry = { A: def("A", { hooks: { beforeLLM: () => void fired.def++ } }) }
    const rt = createRuntime({
      registry,
      fetch,
      hooks: { beforeLLM: () => void fired.runtime++ },
      onMetric: (e) => metrics.push(e),
    })
    await runOne(rt, "A")
    check("H4 uses the def's hooks", fired.def === 1 && fired.runtime === 0, ex.usesDefHooks)
    check("H4 uses the runtime's onMetric", metrics.length > 0, ex.usesRuntimeOnMetric)
  })

  /** H5's seeded transcript: the leading system message and 40 user/assistant pairs. */
  function seeded(): Message[] {
    const g = scenario("H5").given.generator
    const out: Message[] = [g.leading]
    for (let i = 0; i < g.pairs; i++)
      out.push({ role: "user", content: "q".repeat(200) }, { role: "assistant", content: "a".repeat(200) })
    return out
  }
  /** H5's compactor as the fixture attaches it: the def's `hooks.beforeLLM` (core's `compactor`). */
  const compacting = (): Hooks => {
    const o = scenario("H5").given.compactorOptions
    return {
      beforeLLM: compactor({
        maxTokens: o.maxTokens,
        keepTail: o.keepTail,
        summarize: () => "SUMMARY-OF-HEAD",
      }),
    }
  }

  it("H5: a per-agent compactor compacts an agent run; the soul survives verbatim", async () => {
    const ex = scenario("H5").expect
    const store = new MemoryStore()
    const { fetch, wire } = scriptedFetch(single("ok"))
    const rt = createRuntime({ registry: { a: def("a", { hooks: compacting() }) }, fetch, store })
    const h = rt.spawn(rt.root, "a")
    await store.save(rt.conversationId(h), seeded())
    check(
      "H5 pre-run stored messages",
      (await store.get(rt.conversationId(h)))?.length,
      ex.preRunStoredMessages,
    )
    rt.wake(h, "hello")
    await rt.wait(h)
    const sent: Json[] = wire.bodies[0].messages
    check(
      "H5 wire smaller than the stored transcript",
      sent.length < ex.preRunStoredMessages,
      ex.wireTranscriptSmallerThanPreRun,
    )
    check("H5 first wire message", sent[0]?.content, ex.firstWireMessageContent)
    check("H5 wire contains the summary", wireText(wire.bodies[0]).includes(ex.wireTranscriptContains), true)
    // "the retained tail begins at a user turn": after the soul and the summary.
    check("H5 retained tail begins at a user turn", sent[2]?.role, "user")
  })

  it("H6: a compacted turn that suspends parks with the full transcript, not the compacted one", async () => {
    const ex = scenario("H6").expect
    const store = new MemoryStore()
    const llm = {
      style: "openai",
      usagePerCall: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
      scripts: { m: [{ always: true, toolCalls: [{ name: "check_secret", args: {} }] }] },
    }
    const { fetch } = scriptedFetch(llm)
    const registry = { a: def("a", { hooks: compacting(), tools: [TOOLS.check_secret as Tool] }) }
    const rt = createRuntime({ registry, fetch, store })
    const h = rt.spawn(rt.root, "a")
    await store.save(rt.conversationId(h), seeded())
    rt.wake(h, "hello")
    const r = await rt.wait(h)
    check("H6 status", r.status, ex.status)
    const stored = (await store.get(rt.conversationId(h))) ?? []
    // adapted: upstream rewinds the parked turn away (81 stored messages); ours keeps the
    // halted turn after the full transcript (DESIGN §5/§8: core's one resume path repairs
    // it): the first 81 messages are the seeded ones, then the prompt, the call, its placeholder.
    const tail = stored.slice(ex.storedMessagesAfter).map((m) => ("role" in m ? m.role : m.type))
    check("H6 stored messages after", [stored.slice(0, 81), tail], [seeded(), ["user", "assistant", "tool"]])
    check(
      "H6 the compaction is discarded",
      stored.some((m) => JSON.stringify(m).includes("SUMMARY-OF-HEAD")),
      false,
    )
  })
})

describe("upstream agent-hooks invariants", () => {
  const inv = fixture("agent-hooks").invariants
  const soul = "SOUL-OF-A"
  const plain = (extra: Partial<AgentDef> = {}): AgentDef => ({
    name: "a",
    does: "a",
    model: "m",
    soul,
    ...extra,
  })
  const llm = {
    style: "openai",
    usagePerCall: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
    scripts: { m: [{ always: true, text: "ok" }] },
  }
  async function wireOf(opts: Partial<RuntimeOptions>, def = plain()): Promise<Json[]> {
    const { fetch, wire } = scriptedFetch(llm)
    const rt = createRuntime({ registry: { a: def }, fetch, ...opts })
    const h = rt.spawn(rt.root, "a")
    rt.wake(h, "hello")
    await rt.wait(h)
    rt.wake(h, "again")
    await rt.wait(h)
    return wire.bodies
  }

  it("unsetIsByteIdentical, forwardedNotInterpreted, runtimeInvariantsUntouchable, cloneParity", async () => {
    expect(Object.keys(inv)).toEqual([
      "unsetIsByteIdentical",
      "forwardedNotInterpreted",
      "runtimeInvariantsUntouchable",
      "cloneParity",
    ])
    // Unset, at the runtime and at the def: the same wire bytes as a runtime without the fields.
    const without = await wireOf({})
    const unset = await wireOf(
      { hooks: undefined, onMetric: undefined },
      plain({ hooks: undefined, onMetric: undefined }),
    )
    check("invariant: unset is byte-identical", JSON.stringify(unset), JSON.stringify(without))

    // Forwarded, not interpreted: the hook runs once per LLM request, and what it returns is sent.
    let calls = 0
    const forwarded = await wireOf({
      hooks: {
        beforeLLM: ({ messages }) => {
          calls++
          return { messages: [...messages, { role: "user", content: `HOOK-${calls}` }] }
        },
      },
    })
    check(
      "invariant: forwarded, not interpreted",
      forwarded.map((b) => b.messages.at(-1).content),
      ["HOOK-1", "HOOK-2"],
    )

    // A hook that drops every system message it is given cannot drop the handle's soul: the
    // soul is not among the messages a hook rewrites, and every request carries it.
    let dropped = 0
    const untouched = await wireOf({
      hooks: {
        beforeLLM: ({ messages }) => {
          dropped++
          return { messages: messages.filter((m) => !("role" in m) || m.role !== "system") }
        },
      },
    })
    check(
      "invariant: the soul is untouchable",
      [
        dropped,
        untouched.map((b) => b.messages.some((m: Json) => m.role === "system" && m.content.includes(soul))),
      ],
      [2, [true, true]],
    )

    // Clone parity: a child spawned by `task` gets the runtime's hooks and onMetric too.
    const { fetch, wire } = scriptedFetch({
      style: "openai",
      usagePerCall: llm.usagePerCall,
      scripts: {
        lead: [
          { whenToolMsgs: 0, toolCalls: [{ name: "task", args: { agent: "a", prompt: "help" } }] },
          { whenToolMsgs: ">=1", text: "lead: <first tool msg content>" },
        ],
        m: [{ always: true, text: "ok" }],
      },
    })
    const seenBy = new Set<string>()
    const metricModels = new Set<string>()
    const rt = createRuntime({
      registry: { lead: { name: "lead", does: "leads", model: "lead", team: ["a"] }, a: plain() },
      fetch,
      hooks: { beforeLLM: ({ handle }) => void seenBy.add(handle ?? "") },
      onMetric: (e) => {
        if (e.event === "llm") metricModels.add(e.model)
      },
    })
    const lead = rt.spawn(rt.root, "lead")
    rt.wake(lead, "go")
    expect((await rt.wait(lead)).text).toBe("lead: ok")
    expect(wire.bodies).toHaveLength(3)
    check(
      "invariant: clone parity",
      [[...seenBy].sort(), [...metricModels].sort()],
      [
        ["root/lead.1", "root/lead.1/a.1"],
        ["lead", "m"],
      ],
    )
  })
})

it(`all ${EXPECTED_CHECKS} fixture checks pass`, () => {
  console.log(`upstream sub-agent fixtures: ${passed.length} of ${EXPECTED_CHECKS} checks pass`)
  expect(passed.length).toBe(EXPECTED_CHECKS)
})
