import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type AgentDef, type Runtime, createRuntime } from "@toolnexus/agents"
import { type Answer, AnswerConflictError, defineTool, pending } from "@toolnexus/core"
import { type FakeLLMServer, type FakeRequestView, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, expect, it, vi } from "vitest"
import { loadRuntime, resumeRuntime, saveRuntime } from "../src/resume/runtime-persistence.js"
import { SqliteStore } from "../src/sqlite/index.js"

const dir = mkdtempSync(join(tmpdir(), "tnx-rt-persist-"))
let server: FakeLLMServer
beforeAll(async () => {
  server = await createFakeLLMServer()
})
afterAll(async () => {
  await server.close()
  rmSync(dir, { recursive: true, force: true })
})

const answers: (Answer | undefined)[] = []
const transfer = defineTool({
  name: "transfer",
  description: "move money",
  inputSchema: { type: "object" },
  run: (_args, ctx) => {
    answers.push(ctx.answer)
    return ctx.answer?.ok ? "moved" : pending({ kind: "approval", prompt: "Move?" })
  },
})
const registry: Record<string, AgentDef> = {
  lead: { name: "lead", does: "delegates", soul: "lead", team: ["payer"] },
  payer: { name: "payer", does: "pays", soul: "payer", tools: [transfer] },
}
const fresh = (soul: string) => (r: FakeRequestView) => r.system === soul && r.toolResults.length === 0
const llmOptions = () => ({ baseUrl: `${server.url}/v1`, model: "m", apiKey: "k" })

/** Parks lead → payer on the transfer's approval and saves the runtime under `key`. */
async function parkTree(store: SqliteStore, key: string) {
  server.addRule({
    match: fresh("lead"),
    reply: { toolCalls: [{ name: "task", arguments: { agent: "payer", prompt: "pay" } }] },
  })
  server.addRule({ match: fresh("payer"), reply: { toolCalls: [{ name: "transfer", arguments: {} }] } })
  const rt = createRuntime({ registry, llm: llmOptions(), store, namespace: `${key}:` })
  const lead = rt.spawn(rt.root, "lead")
  rt.wake(lead, "go")
  const parked = await rt.wait(lead)
  await saveRuntime(store, key, rt)
  return { rt, lead, answer: { id: parked.pending?.id as string, ok: true } }
}

it("a failed cascade keeps the saved runtime and frees the answer; the next delivery finishes it once", async () => {
  const store = new SqliteStore({ path: join(dir, "rt.db") })
  const { lead, answer } = await parkTree(store, "order-1")
  const saved = await store.getSnapshot("order-1")
  const llm = llmOptions()
  server.addRule({
    match: (r) => r.system === "payer",
    reply: (r) => ({ text: `payer: ${r.toolResults[0]?.content}` }),
  })
  server.addRule({ match: (r) => r.system === "lead", reply: { status: 400, text: "boom" }, times: 1 })
  server.addRule({
    match: (r) => r.system === "lead",
    reply: (r) => ({ text: `lead: ${r.toolResults[0]?.content}` }),
  })

  const failed = await resumeRuntime(store, "order-1", answer, { registry, llm })
  expect((await failed.wait(lead)).status).toBe("error")
  expect(await store.getSnapshot("order-1")).toEqual(saved)
  // A failed cascade writes nothing but its checkpoints: both handles still wait on the request.
  expect(await store.getPending("order-1:root/lead.1")).toMatchObject({ id: answer.id })
  expect(await store.getPending("order-1:root/lead.1/payer.1")).toMatchObject({ id: answer.id })

  const done = await resumeRuntime(store, "order-1", answer, { registry, llm })
  expect(await done.wait(lead)).toMatchObject({ status: "done", text: "lead: payer: moved" })
  // The payer goes on from its checkpointed tool result: the tool ran once.
  expect(done.trace().some((line) => line.includes("RECOVERED"))).toBe(false)
  expect(answers.filter((a) => a?.ok)).toHaveLength(1)
  expect((await loadRuntime(store, "order-1", { registry, llm })).stateOf(lead)).toBe("idle")
  // A repeated delivery after success is refused with the first decision.
  await expect(resumeRuntime(store, "order-1", answer, { registry, llm })).rejects.toMatchObject({
    name: "AnswerConflictError",
    decision: { ok: true },
  })

  // A worker that died after the last save but before saving the runtime left it stale:
  // a redelivery is refused as already applied, and repairs the saved runtime on the way.
  await store.putSnapshot("order-1", saved)
  const requests = server.requests.length
  await expect(resumeRuntime(store, "order-1", answer, { registry, llm })).rejects.toThrow(
    AnswerConflictError,
  )
  const repaired = await loadRuntime(store, "order-1", { registry, llm })
  expect(repaired.stateOf(lead)).toBe("idle")
  expect(await repaired.wait(lead)).toMatchObject({ status: "done", text: "lead: payer: moved" })
  expect(server.requests.length).toBe(requests)
  expect(answers.filter((a) => a?.ok)).toHaveLength(1)

  // loadRuntime alone reconciles a stale snapshot the same way, and saves the repair.
  await store.putSnapshot("order-1", saved)
  const reconciled = await loadRuntime(store, "order-1", { registry, llm })
  expect(reconciled.stateOf(lead)).toBe("idle")
  expect(await reconciled.wait(lead)).toMatchObject({ status: "done", text: "lead: payer: moved" })
  expect(await store.getSnapshot("order-1")).not.toEqual(saved)
  expect(await store.findRequest(answer.id)).toBeUndefined()
  expect(server.requests.length).toBe(requests)
  expect(answers.filter((a) => a?.ok)).toHaveLength(1)
  await store.close()
})

it("a throwing rt.resume releases its claim at once (an attempt counted): the next delivery resumes", async () => {
  server.reset()
  answers.length = 0
  const store = new SqliteStore({ path: join(dir, "rt-throw.db") })
  const { rt, lead, answer } = await parkTree(store, "order-2")
  const llm = llmOptions()
  server.addRule({ match: (r) => r.system === "payer", reply: { text: "paid" } })
  server.addRule({ match: (r) => r.system === "lead", reply: { text: "lead done" } })

  const resume = vi
    .spyOn(Object.getPrototypeOf(rt) as { resume: Runtime["resume"] }, "resume")
    .mockRejectedValueOnce(new Error("the runtime blew up"))
  try {
    // A lease far longer than the test: only a release lets the next delivery in.
    await expect(
      resumeRuntime(store, "order-2", answer, { registry, llm, leaseMs: 600_000 }),
    ).rejects.toThrow("the runtime blew up")
  } finally {
    resume.mockRestore()
  }
  expect(await store.findRequest(answer.id)).toMatchObject({ attempts: 1 })
  const done = await resumeRuntime(store, "order-2", answer, { registry, llm, leaseMs: 600_000 })
  expect(await done.wait(lead)).toMatchObject({ status: "done", text: "lead done" })
  expect(answers.filter((a) => a?.ok)).toHaveLength(1)
  await store.close()
})

it("two trees in one store: unique namespaces by default; a shared one is refused by saveRuntime, nothing written", async () => {
  const store = new SqliteStore({ path: join(dir, "two-trees.db") })
  const llm = { baseUrl: `${server.url}/v1`, model: "m", apiKey: "k" }
  server.reset()
  answers.length = 0
  server.addRule({
    match: fresh("lead"),
    reply: { toolCalls: [{ name: "task", arguments: { agent: "payer", prompt: "pay" } }] },
  })
  server.addRule({ match: fresh("payer"), reply: { toolCalls: [{ name: "transfer", arguments: {} }] } })
  server.addRule({
    match: (r) => r.system === "payer",
    reply: (r) => ({ text: `payer: ${r.toolResults[0]?.content}` }),
  })
  server.addRule({
    match: (r) => r.system === "lead",
    reply: (r) => ({ text: `lead: ${r.toolResults[0]?.content}` }),
  })
  const park = async (namespace?: string) => {
    const rt = createRuntime({ registry, llm, store, ...(namespace ? { namespace } : {}) })
    const lead = rt.spawn(rt.root, "lead")
    rt.wake(lead, "go")
    return { rt, result: await rt.wait(lead) }
  }
  // Without a namespace: two trees park side by side and each is saved and resumed on its own.
  const a = await park()
  const b = await park()
  expect([a.result.status, b.result.status]).toEqual(["pending", "pending"])
  await saveRuntime(store, "tree-a", a.rt)
  await saveRuntime(store, "tree-b", b.rt)
  for (const [key, t] of [
    ["tree-a", a],
    ["tree-b", b],
  ] as const) {
    const rt = await resumeRuntime(
      store,
      key,
      { id: t.result.pending?.id as string, ok: true },
      { registry, llm },
    )
    expect(await rt.wait({ id: "root/lead.1" })).toMatchObject({ status: "done", text: "lead: payer: moved" })
  }

  // The same namespace twice: the second tree's run names the way out, and it is not saved.
  const first = await park("ticket-42")
  await saveRuntime(store, "ticket-42", first.rt)
  const second = await park("ticket-42")
  expect(second.result.status).toBe("error")
  expect(second.result.text).toContain(`already waits on request ${first.result.pending?.id}`)
  expect(second.result.text).toContain("deliverAnswer")
  expect(second.result.text).not.toContain("askWithAnswer")
  await expect(saveRuntime(store, "ticket-42-again", second.rt)).rejects.toMatchObject({
    name: "RuntimeCollisionError",
    code: "TNX_RUNTIME_COLLISION",
    runtimeKey: "ticket-42-again",
    conversationId: "ticket-42/root/lead.1",
    requestId: first.result.pending?.id,
  })
  expect(await store.getSnapshot("ticket-42-again")).toBeUndefined()
  // The first tree is untouched and still resumes.
  const rt = await resumeRuntime(
    store,
    "ticket-42",
    { id: first.result.pending?.id as string, ok: true },
    { registry, llm },
  )
  expect(await rt.wait({ id: "root/lead.1" })).toMatchObject({ status: "done" })
  await store.close()
})

it("a resumed tree writes once: its conversations, snapshot and claim in one commitResume, no repair reads", async () => {
  server.reset()
  const store = new SqliteStore({ path: join(dir, "once.db") })
  const { lead, answer } = await parkTree(store, "once")
  server.addRule({
    match: (r) => r.system === "payer",
    reply: (r) => ({ text: `payer: ${r.toolResults[0]?.content}` }),
  })
  server.addRule({
    match: (r) => r.system === "lead",
    reply: (r) => ({ text: `lead: ${r.toolResults[0]?.content}` }),
  })
  const calls: string[] = []
  const counted = new Proxy(store, {
    get(target, name) {
      const value = Reflect.get(target, name, target)
      if (typeof value !== "function") return value
      return (...args: unknown[]) => {
        const meta = name === "save" ? (args[2] as { checkpoint?: boolean } | undefined) : undefined
        calls.push(meta?.checkpoint ? "checkpoint" : String(name))
        return value.apply(target, args)
      }
    },
  })
  const rt = await resumeRuntime(counted, "once", answer, { registry, llm: llmOptions() })
  expect(await rt.wait(lead)).toMatchObject({ status: "done", text: "lead: payer: moved" })
  // The claim and the checkpoints §9 requires; then the one commit. No final save, no
  // separate snapshot, no read repairing a window between writes.
  expect(calls.filter((c) => c !== "get" && c !== "getSnapshot" && c !== "findRequest")).toEqual([
    "claimAnswer",
    "checkpoint",
    "checkpoint",
    "commitResume",
  ])
  expect(await store.getPending("once:root/lead.1")).toBeUndefined()
  expect(await store.getDecision(answer.id)).toEqual({ ok: true })
  expect((await loadRuntime(store, "once", { registry, llm: llmOptions() })).parked()).toEqual([])
  await store.close()
})
