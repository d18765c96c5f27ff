/**
 * @internal One worker process of the crash-point kit. It reads its job from the
 * `TNX_CRASH_JOB` environment variable, prints one JSON line with its outcome, and kills
 * itself with SIGKILL at the job's boundary, if it has one.
 */
import { appendFileSync } from "node:fs"
import { createRuntime } from "@toolnexus/agents"
import { type Answer, type Hooks, createClient, createToolkit, defineTool, pending } from "@toolnexus/core"
import type { DurableStore } from "../durable-store.js"
import { askWithAnswer } from "../resume/ask-with-answer.js"
import { deliverAnswer, retryFailed, sweepExpiredClaims } from "../resume/deliver-answer.js"
import { resumeRuntime, saveRuntime } from "../resume/runtime-persistence.js"
import { type CrashJob, openKitStore } from "./crash-job.js"

const job = JSON.parse(process.env.TNX_CRASH_JOB ?? "{}") as CrashJob
const die = (at: string) => {
  if (job.die === at) process.kill(process.pid, "SIGKILL")
}
// One log for the whole kit run: a sweep in one scenario's worker may complete another's run.
const record = (phase: "start" | "done", ref: unknown, key: string | undefined) =>
  appendFileSync(job.effects, `${JSON.stringify({ phase, ref, key, pid: process.pid })}\n`)

const pay = defineTool({
  name: "pay",
  description: "pays an amount once approved",
  inputSchema: { type: "object", properties: { amount: { type: "number" }, ref: { type: "string" } } },
  run: async ({ amount, ref }, ctx) => {
    if (!ctx.answer) return pending({ kind: "approval", prompt: `Pay ${amount}?` })
    record("start", ref, ctx.idempotencyKey)
    die("during-tool")
    record("done", ref, ctx.idempotencyKey)
    die("after-tool")
    return ctx.answer.ok ? `paid ${amount}` : "not paid"
  },
})

const registry = {
  lead: { name: "lead", does: "leads", soul: "lead", team: ["payer"] },
  payer: { name: "payer", does: "pays", soul: "payer", tools: [pay] },
}

/** The store, with the job's boundary wired into the calls that cross it. */
function withBoundaries(store: DurableStore): DurableStore {
  return new Proxy(store, {
    get(target, name) {
      const value = Reflect.get(target, name, target)
      if (typeof value !== "function") return value
      const method = value.bind(target)
      if (name === "claimAnswer")
        return async (...args: unknown[]) => {
          const claim = await method(...args)
          die("after-claim")
          return claim
        }
      if (name === "renewClaim")
        return (...args: unknown[]) => {
          const renewal = method(...args)
          die("during-renewal")
          return renewal
        }
      // A resumed runtime's cascade applies the answer with its one commit: the final save.
      if (name === "commitResume")
        return async (...args: unknown[]) => {
          die("before-save")
          await method(...args)
          die("after-save")
        }
      if (name === "save")
        return async (id: string, messages: unknown, meta?: { claim?: string; checkpoint?: boolean }) => {
          const final = meta?.claim !== undefined && !meta.checkpoint
          if (final) die("before-save")
          await method(id, messages, meta)
          if (meta?.checkpoint) die("after-checkpoint")
          if (final) die("after-save")
        }
      return method
    },
  })
}

async function main(): Promise<unknown> {
  const store = withBoundaries(await openKitStore(job.store, job.opTimeoutMs))
  const hooks: Hooks = { afterLLM: () => (job.role === "resume" ? die("after-llm-reply") : undefined) }
  const llm = { baseUrl: job.llmUrl, style: "openai" as const, model: "kit", apiKey: "kit" }
  const client = createClient({ ...llm, store, retries: 0, hooks })
  const toolkit = await createToolkit({ extraTools: [pay] })
  const runtime = { registry, llm, hooks }
  const common = { client, toolkit, runtime, leaseMs: job.leaseMs, maxAttempts: job.maxAttempts }
  const answer = job.answer as Answer
  switch (job.role) {
    case "halt": {
      if (job.flow === "askWithAnswer") {
        const result = await client.ask(`pay 5 ${job.marker}`, { id: job.id, toolkit })
        return { status: result.status, pending: result.pending }
      }
      const rt = createRuntime({ registry, llm, store, namespace: `${job.id}/` })
      const lead = rt.spawn(rt.root, "lead")
      rt.wake(lead, `begin ${job.marker}`)
      const result = await rt.wait(lead)
      await saveRuntime(store, job.id, rt)
      return { status: result.status, pending: result.pending, text: result.text }
    }
    case "resume": {
      if (job.flow === "askWithAnswer") {
        const result = await askWithAnswer(client, {
          id: job.id,
          answer,
          toolkit,
          leaseMs: job.leaseMs,
          maxAttempts: job.maxAttempts,
        })
        return { status: result.status, text: result.text }
      }
      const rt = await resumeRuntime(store, job.id, answer, {
        ...runtime,
        leaseMs: job.leaseMs,
        maxAttempts: job.maxAttempts,
      })
      const result = await rt.wait(rt.handle("root/lead.1") as { id: string })
      return { status: result.status, text: result.text }
    }
    case "recover": {
      // What a host does after a crash: sweep expired claims, then redeliver if still open.
      const expired = (await store.listExpiredClaims()).map((c) => c.request.id)
      const swept = await sweepExpiredClaims(store, common)
      const failed = new Set(swept.failed.map((f) => f.requestId))
      // The sweep is global; report what it completed (other scenarios' runs included).
      const completed = expired.filter((requestId) => !failed.has(requestId))
      if (completed.includes(answer.id)) return { recovered: "sweep", completed }
      const open = await store.findRequest(answer.id)
      if (open === undefined || open.state === "claimed") return { recovered: false, completed }
      const delivered = await deliverAnswer(store, answer, common)
      return { recovered: "redelivery", status: delivered.result.status, completed }
    }
    case "retry": {
      const delivered = await retryFailed(store, answer.id, common)
      return { status: delivered.result.status }
    }
  }
}

main().then(
  (outcome) => {
    process.stdout.write(`${JSON.stringify(outcome)}\n`, () => process.exit(0))
  },
  (error: unknown) => {
    const e = error as { name?: string; code?: string; message?: string }
    process.stdout.write(`${JSON.stringify({ error: e?.name, code: e?.code, message: e?.message })}\n`, () =>
      process.exit(0),
    )
  },
)
