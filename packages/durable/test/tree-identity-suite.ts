import {
  type AgentDef,
  type Runtime,
  type RuntimeOptions,
  RuntimeError,
  createRuntime,
} from "@toolnexus/agents"
import {
  type Answer,
  AnswerConflictError,
  UnknownRequestError,
  createClient,
  defineTool,
  pending,
} from "@toolnexus/core"
import { describe, expect, it } from "vitest"
import type { DurableStore } from "../src/durable-store.js"
import { RuntimeCollisionError, RuntimeHeldError } from "../src/errors.js"
import { askWithAnswer } from "../src/resume/ask-with-answer.js"
import { deliverAnswer } from "../src/resume/deliver-answer.js"
import { loadRuntime, resumeRuntime, saveRuntime } from "../src/resume/runtime-persistence.js"
import { type ResumeBackend, storesOf } from "./resume-suite.js"

/** Tokens of every scripted LLM reply (30 prompt + 10 completion). */
const TOKENS_PER_TURN = 40

/** What each model answers, by the tool results it was sent: the fetch seam's whole script. */
const SCRIPTS: Record<string, (toolResults: string[]) => { call?: [string, object]; text?: string }> = {
  lead: (r) =>
    r.length ? { text: `lead: ${r[0]}` } : { call: ["task", { agent: "payer", prompt: "pay 5" }] },
  payer: (r) => (r.length ? { text: `payer: ${r[0]}` } : { call: ["transfer", { amount: 5 }] }),
  boss: (r) =>
    r.length ? { text: `boss: ${r.at(-1)}` } : { call: ["task", { agent: "worker", prompt: "loop" }] },
  worker: () => ({ call: ["lookup", {}] }),
}

/** An OpenAI-style chat-completions endpoint answering from {@link SCRIPTS} by `model`. */
const scriptedFetch: typeof fetch = async (_url, init) => {
  const body = JSON.parse(String(init?.body))
  const results = body.messages
    .filter((m: { role: string }) => m.role === "tool")
    .map((m: { content: string }) => m.content)
  const step = (SCRIPTS[body.model] as (typeof SCRIPTS)[string])(results)
  const message = step.call
    ? {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: `call_${results.length}`,
            type: "function",
            function: { name: step.call[0], arguments: JSON.stringify(step.call[1]) },
          },
        ],
      }
    : { role: "assistant", content: step.text }
  return Response.json({
    id: "cmpl",
    object: "chat.completion",
    choices: [{ index: 0, message, finish_reason: step.call ? "tool_calls" : "stop" }],
    usage: { prompt_tokens: 30, completion_tokens: 10, total_tokens: TOKENS_PER_TURN },
  })
}

/**
 * Request identity and accounting across runtime trees saved in one store: ids unique across
 * trees and stable across save → restore from another store instance, one answer ⇒ one effect,
 * repeated answers refused with the first decision, per-handle and subtree accounting after a
 * restore, `maxTurns` as the handle's own turns and `maxTotalTurns` as a subtree cap, and every
 * refusal naming its key or the call that works. Written once, run on every backend.
 */
export function describeTreeIdentitySuite(name: string, backend: ResumeBackend): void {
  describe.skipIf(backend.skip !== undefined)(`runtime trees in one store on ${name}`, () => {
    // Identity and accounting are under test here, not store deadlines: each store gets 15 s
    // (a 200 ms one failed a save on PostgreSQL in CI under load: the run ended "error").
    const openStore = storesOf(backend)
    const open = () => openStore({ opTimeoutMs: 15_000 })

    /** Every transfer that ran with an approval, by idempotency key: the effects. */
    const effects: string[] = []
    const transfer = defineTool({
      name: "transfer",
      description: "move money",
      inputSchema: { type: "object", properties: { amount: { type: "number" } } },
      run: ({ amount }, ctx) => {
        if (!ctx.answer) return pending({ kind: "approval", prompt: `Move ${amount}?` })
        if (ctx.answer.ok) effects.push(ctx.idempotencyKey as string)
        return ctx.answer.ok ? `moved ${amount}` : "not moved"
      },
    })
    const lookup = defineTool({
      name: "lookup",
      description: "look up",
      inputSchema: { type: "object" },
      run: () => "x",
    })

    /** A new registry each call, as a restarted process builds it. */
    const registry = (budgets: Record<string, AgentDef["budget"]> = {}): Record<string, AgentDef> => {
      const defs: Record<string, AgentDef> = {
        lead: { name: "lead", does: "delegates", model: "lead", team: ["payer"] },
        payer: { name: "payer", does: "pays", model: "payer", tools: [transfer] },
        boss: { name: "boss", does: "delegates", model: "boss", team: ["worker"] },
        worker: { name: "worker", does: "loops", model: "worker", tools: [lookup] },
      }
      for (const [def, budget] of Object.entries(budgets)) (defs[def] as AgentDef).budget = budget
      return defs
    }
    const options = (extra: Partial<RuntimeOptions> = {}): RuntimeOptions => ({
      registry: registry(),
      fetch: scriptedFetch,
      ...extra,
    })
    const unique = (label: string) => `${label}-${Math.random().toString(36).slice(2, 10)}`

    /** Parks lead → payer on the transfer's approval in `store` and saves the tree under `key`. */
    async function parkedTree(store: DurableStore, key: string, extra: Partial<RuntimeOptions> = {}) {
      const rt = createRuntime(options({ store, ...extra }))
      const lead = rt.spawn(rt.root, "lead")
      rt.wake(lead, "go")
      const parked = await rt.wait(lead)
      expect(parked.status).toBe("pending")
      await saveRuntime(store, key, rt)
      return { rt, lead, request: parked.pending as NonNullable<typeof parked.pending> }
    }

    /** The tree's accounting as a host reads it: each handle's view and its snapshot spend. */
    const accounting = (rt: Runtime) =>
      rt.snapshot().handles.map((h) => {
        const view = rt.inspect({ id: h.id })
        return {
          id: h.id,
          turns: view.turns,
          totalTurns: view.totalTurns,
          tokens: view.tokens,
          spend: h.spend,
        }
      })

    describe("identity", () => {
      it("two trees without a namespace: same handle ids, distinct conversations and request ids", async () => {
        const store = await open()
        const a = await parkedTree(store, unique("tree-a"))
        const b = await parkedTree(store, unique("tree-b"))
        expect(a.lead.id).toBe(b.lead.id)
        const leaf = { id: "root/lead.1/payer.1" }
        expect(a.rt.conversationId(leaf)).not.toBe(b.rt.conversationId(leaf))
        expect(a.request.id).not.toBe(b.request.id)
      })

      it("the store lists each tree's request once, with its own runtime key and path", async () => {
        const store = await open()
        const [keyA, keyB] = [unique("list-a"), unique("list-b")]
        const a = await parkedTree(store, keyA)
        const b = await parkedTree(store, keyB)
        for (const [key, tree] of [
          [keyA, a],
          [keyB, b],
        ] as const) {
          const entry = await store.findRequest(tree.request.id)
          expect(entry).toMatchObject({ runtimeKey: key, path: ["root", "lead.1", "payer.1"], attempts: 0 })
          expect(entry?.conversationId).toBe(tree.rt.conversationId({ id: "root/lead.1/payer.1" }))
        }
        const listed = (await store.listPending()).filter(
          (e) => e.runtimeKey === keyA || e.runtimeKey === keyB,
        )
        expect(listed.map((e) => e.request.id).sort()).toEqual([a.request.id, b.request.id].sort())
      })

      it("request ids and data.path are stable across save → restore from another store instance", async () => {
        const store = await open()
        const key = unique("stable")
        const { rt, request } = await parkedTree(store, key)
        const restored = await loadRuntime(await open(), key, options())
        expect(restored.parked()).toEqual(rt.parked())
        expect(restored.parked().map((p) => p.request.id)).toEqual([request.id])
        expect(restored.inspect({ id: "root/lead.1" }).pending).toEqual(request)
        expect(request.data?.path).toEqual(["root", "lead.1", "payer.1"])
        expect(restored.conversationId({ id: "root/lead.1/payer.1" })).toBe(
          rt.conversationId({ id: "root/lead.1/payer.1" }),
        )
      })

      it("a restored tree saved again keeps its namespace and ids: nothing collides, nothing is renamed", async () => {
        const store = await open()
        const key = unique("resave")
        const { rt, request } = await parkedTree(store, key)
        const restored = await loadRuntime(await open(), key, options())
        await saveRuntime(store, key, restored)
        expect(restored.snapshot().namespace).toBe(rt.snapshot().namespace)
        expect((await store.findRequest(request.id))?.runtimeKey).toBe(key)
      })
    })

    describe("one answer, one effect", () => {
      it("a delivered approval runs the transfer once and finishes the tree", async () => {
        const store = await open()
        const { request } = await parkedTree(store, unique("once"))
        const before = effects.length
        const delivered = await deliverAnswer(
          await open(),
          { id: request.id, ok: true },
          { runtime: options() },
        )
        expect(delivered).toMatchObject({
          kind: "runtime",
          result: { status: "done", text: "lead: payer: moved 5" },
        })
        expect(effects.length - before).toBe(1)
      })

      for (const second of [
        { id: "", ok: true },
        { id: "", ok: false, reason: "changed my mind" },
      ]) {
        it(`a second answer (ok: ${second.ok}) is refused with the first decision and runs nothing`, async () => {
          const store = await open()
          const { request } = await parkedTree(store, unique("twice"))
          await deliverAnswer(store, { id: request.id, ok: true }, { runtime: options() })
          const before = effects.length
          const refusal = await deliverAnswer(
            await open(),
            { ...second, id: request.id },
            { runtime: options() },
          ).catch((e) => e)
          expect(refusal).toBeInstanceOf(AnswerConflictError)
          expect(refusal.decision).toEqual({ ok: true })
          expect(effects.length).toBe(before)
        })
      }

      it("a first decline is the decision a later approval is refused with", async () => {
        const store = await open()
        const { request } = await parkedTree(store, unique("declined"))
        const declined = await deliverAnswer(
          store,
          { id: request.id, ok: false, reason: "no" },
          { runtime: options() },
        )
        expect(declined.result.status).toBe("done")
        const refusal = await deliverAnswer(
          store,
          { id: request.id, ok: true },
          { runtime: options() },
        ).catch((e) => e)
        expect(refusal).toBeInstanceOf(AnswerConflictError)
        expect(refusal.decision).toEqual({ ok: false, reason: "no" })
      })

      it("resumeRuntime after a delivery refuses with the first decision too", async () => {
        const store = await open()
        const key = unique("resume-twice")
        const { request } = await parkedTree(store, key)
        await resumeRuntime(store, key, { id: request.id, ok: true }, options())
        const refusal = await resumeRuntime(await open(), key, { id: request.id, ok: true }, options()).catch(
          (e) => e,
        )
        expect(refusal).toBeInstanceOf(AnswerConflictError)
        expect(refusal.decision).toEqual({ ok: true })
      })

      it("two deliveries at once from two store instances: one effect, the other refused", async () => {
        const store = await open()
        const { request } = await parkedTree(store, unique("race"))
        const before = effects.length
        const answer: Answer = { id: request.id, ok: true }
        // A long deadline: the losing claim waits for the winner's, and a busy machine must not
        // turn that wait into a StoreError.
        const [one, two] = [await open(), await open()]
        const outcomes = await Promise.allSettled([
          deliverAnswer(one, answer, { runtime: options() }),
          deliverAnswer(two, answer, { runtime: options() }),
        ])
        expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1)
        const refused = outcomes.find((o) => o.status === "rejected") as PromiseRejectedResult
        expect(refused.reason).toBeInstanceOf(AnswerConflictError)
        expect(effects.length - before).toBe(1)
      })

      it("answering one tree leaves the other parked, and each tree's effect has its own key", async () => {
        const store = await open()
        const [keyA, keyB] = [unique("pair-a"), unique("pair-b")]
        const a = await parkedTree(store, keyA)
        const b = await parkedTree(store, keyB)
        const before = effects.length
        await deliverAnswer(store, { id: a.request.id, ok: true }, { runtime: options() })
        const stillParked = await loadRuntime(await open(), keyB, options())
        expect(stillParked.parked().map((p) => p.request.id)).toEqual([b.request.id])
        await deliverAnswer(store, { id: b.request.id, ok: true }, { runtime: options() })
        const keys = effects.slice(before)
        expect(keys).toHaveLength(2)
        expect(new Set(keys).size).toBe(2)
      })
    })

    describe("accounting across a restore", () => {
      it("per-handle and subtree turns, tool calls and tokens are the same after a restore", async () => {
        const store = await open()
        const key = unique("acct-parked")
        const { rt } = await parkedTree(store, key)
        const restored = await loadRuntime(await open(), key, options())
        expect(accounting(restored)).toEqual(accounting(rt))
        const [, lead, payer] = accounting(restored)
        expect(payer).toMatchObject({ turns: 1, totalTurns: 1, tokens: TOKENS_PER_TURN })
        expect(lead).toMatchObject({ turns: 1, totalTurns: 2, tokens: 2 * TOKENS_PER_TURN })
        // A suspended call is not spent yet: it counts when it settles.
        expect([lead?.spend.toolCalls, payer?.spend.toolCalls]).toEqual([0, 0])
      })

      it("after the answer, the resumed tree counts every turn once: own turns, subtree turns, tokens", async () => {
        const store = await open()
        const key = unique("acct-done")
        const { request } = await parkedTree(store, key)
        const { result } = await deliverAnswer(
          await open(),
          { id: request.id, ok: true },
          { runtime: options() },
        )
        // lead: the delegating turn and the final one; payer: the asking turn and the final one.
        expect(result).toMatchObject({ turns: 2, totalTurns: 4, totalTokens: 4 * TOKENS_PER_TURN })
        const reloaded = await loadRuntime(await open(), key, options())
        const [, lead, payer] = accounting(reloaded)
        expect(lead).toMatchObject({ turns: 2, totalTurns: 4, tokens: 4 * TOKENS_PER_TURN })
        expect(payer).toMatchObject({ turns: 2, totalTurns: 2, tokens: 2 * TOKENS_PER_TURN })
        // The transfer, once; the lead's subtree adds its own task call.
        expect([lead?.spend.toolCalls, payer?.spend.toolCalls]).toEqual([2, 1])
        expect(reloaded.parked()).toEqual([])
      })
    })

    describe("budgets", () => {
      /** Runs boss → worker (which never stops calling lookup) with the given budgets, saved and restored. */
      async function budgetTree(budgets: Record<string, AgentDef["budget"]>) {
        const store = await open()
        const key = unique("budget")
        const rt = createRuntime(options({ store, registry: registry(budgets) }))
        const boss = rt.spawn(rt.root, "boss")
        rt.wake(boss, "go")
        const result = await rt.wait(boss)
        await saveRuntime(store, key, rt)
        const restored = await loadRuntime(await open(), key, options({ registry: registry(budgets) }))
        const worker = restored.snapshot().handles.find((h) => h.def === "worker")
        return { result, restored, worker, boss }
      }

      it("maxTurns counts own turns: a worker with maxTurns 3 under a boss with 2 runs 3 turns", async () => {
        const { result, restored, worker, boss } = await budgetTree({
          boss: { maxTurns: 2 },
          worker: { maxTurns: 3 },
        })
        expect(worker?.lastResult).toMatchObject({ status: "incomplete", limit: "maxTurns", turns: 3 })
        expect(worker?.budget.maxTurns).toBe(3)
        expect(result).toMatchObject({ status: "done", turns: 2, totalTurns: 5 })
        expect(restored.inspect(boss)).toMatchObject({ turns: 2, totalTurns: 5, tokens: 5 * TOKENS_PER_TURN })
      })

      it("maxTotalTurns caps the subtree: the worker gets what is left and the refusal names the key", async () => {
        const { result, worker } = await budgetTree({ boss: { maxTotalTurns: 3 } })
        expect(worker?.budget.maxTotalTurns).toBe(2)
        expect(worker?.lastResult).toMatchObject({ status: "incomplete", limit: "maxTotalTurns", turns: 2 })
        expect(result).toMatchObject({
          status: "incomplete",
          limit: "maxTotalTurns",
          turns: 1,
          totalTurns: 3,
        })
      })

      it("a restored tree still refuses a spawn past maxChildren, naming the key", async () => {
        const { restored, boss } = await budgetTree({
          boss: { maxChildren: 1, maxTurns: 2 },
          worker: { maxTurns: 2 },
        })
        const refusal = (() => {
          try {
            restored.spawn(boss, "worker")
          } catch (e) {
            return e
          }
        })()
        expect(refusal).toBeInstanceOf(RuntimeError)
        expect((refusal as RuntimeError).message).toMatch(/maxChildren/)
      })

      it("a restored tree still refuses a spawn past maxDepth, naming the key", async () => {
        const { restored, boss } = await budgetTree({
          boss: { maxDepth: 1, maxTurns: 2 },
          worker: { maxTurns: 2 },
        })
        // The delegated worker was closed when its task settled; a new child of the boss is at the limit.
        const child = restored.spawn(boss, "worker")
        expect(() => restored.spawn(child, "worker")).toThrow(/maxDepth/)
      })

      it("a restored tree refuses a spawn under a used-up token pool, naming the key", async () => {
        const { restored, boss } = await budgetTree({ boss: { maxTokens: 3 * TOKENS_PER_TURN } })
        expect(() => restored.spawn(boss, "worker")).toThrow(/maxTokens/)
      })
    })

    describe("refusals name the call that works", () => {
      it("askWithAnswer on a tree's conversation is RuntimeHeldError naming the runtime key and deliverAnswer", async () => {
        const store = await open()
        const key = unique("held")
        const { rt, request } = await parkedTree(store, key)
        const client = createClient({
          baseUrl: "http://127.0.0.1:9/v1",
          style: "openai",
          model: "m",
          apiKey: "k",
          store,
        })
        const id = rt.conversationId({ id: "root/lead.1/payer.1" })
        const refusal = await askWithAnswer(client, { id, answer: { id: request.id, ok: true } }).catch(
          (e) => e,
        )
        expect(refusal).toBeInstanceOf(RuntimeHeldError)
        expect(refusal.runtimeKey).toBe(key)
        expect(refusal.message).toContain("deliverAnswer(store, answer, { runtime })")
        expect((await store.findRequest(request.id))?.attempts).toBe(0)
      })

      it("an unknown request id is UnknownRequestError naming it", async () => {
        const refusal = await deliverAnswer(
          await open(),
          { id: "pnd-nobody-asked", ok: true },
          { runtime: options() },
        ).catch((e) => e)
        expect(refusal).toBeInstanceOf(UnknownRequestError)
        expect(refusal.message).toContain("pnd-nobody-asked")
      })

      it("two runtimes sharing a namespace: the second save is refused, nothing written, naming the fix", async () => {
        const store = await open()
        const namespace = unique("shared")
        const [keyA, keyB] = [unique("ns-a"), unique("ns-b")]
        const a = await parkedTree(store, keyA, { namespace })
        const rt = createRuntime(options({ store, namespace }))
        const lead = rt.spawn(rt.root, "lead")
        rt.wake(lead, "go")
        await rt.wait(lead)
        const refusal = await saveRuntime(store, keyB, rt).catch((e) => e)
        expect(refusal).toBeInstanceOf(RuntimeCollisionError)
        expect(refusal.message).toMatch(/nothing was written.*its own/s)
        expect(await store.getSnapshot(keyB)).toBeUndefined()
        expect((await store.findRequest(a.request.id))?.runtimeKey).toBe(keyA)
      })
    })
  })
}
