import { type Task, TaskState } from "@a2a-js/sdk"
import { createMemoryStore } from "@toolnexus/durable"
import { describe, expect, it } from "vitest"
import { doorEngines, useEngine } from "../../ui/test/engine-kit.js"
import { serveA2A } from "../src/inbound/serve-a2a.js"
import { answerMessage, message, sdkClient, send } from "./inbound-kit.js"
import { serveFetch } from "./serve-node.js"

// §17 "Doors take a host", on the engines: serveA2A({ host, agent }) over connectRestate and
// connectDbos, driven by the @a2a-js/sdk client. The worker is SIGKILLed while the task is
// input-required; a new worker runs the approved tool once (counted in the test's tool log),
// and a second answer on the task is refused naming its state, through the host the conflict.

const requestOf = (task: Task) => {
  const part = task.status?.message?.parts.find((p) => p.content?.$case === "data")
  return (part?.content?.value as { request: { id: string } } | undefined)?.request as { id: string }
}

describe.each(doorEngines)("serveA2A over $name", (engine) => {
  const opened = useEngine(engine, "serveA2A")

  it.skipIf(engine.skip !== undefined)(
    "input-required survives a worker SIGKILL; answered, the tool runs once; a duplicate answer is refused",
    async () => {
      const { host, refunds, restart } = opened()
      const store = createMemoryStore()
      const handler = serveA2A({ card: { name: "refunds" }, host, agent: "refunds", store })
      const http = await serveFetch(handler.fetch)
      try {
        const client = await sdkClient(http.url)
        const halted = (await client.sendMessage(send(message("refund order 42")))) as Task
        expect(halted.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
        const request = requestOf(halted)
        const runId = `a2a.${halted.id}`
        expect((await host.findRequest(request.id))?.conversationId).toBe(runId)

        await restart()
        const done = (await client.sendMessage(send(answerMessage({ ok: true }, halted.id)))) as Task
        expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
        expect(done.artifacts[0]?.parts[0]?.content).toEqual({ $case: "text", value: "done: refunded 30" })
        expect(refunds(runId)).toHaveLength(1)
        expect(await host.getDecision(request.id)).toEqual({ ok: true })

        await expect(client.sendMessage(send(answerMessage({ ok: true }, halted.id)))).rejects.toThrow(
          /completed/,
        )
        await expect(host.deliverAnswer({ id: request.id, ok: true })).rejects.toMatchObject({
          code: "TNX_ANSWER_CONFLICT",
          decision: { ok: true },
        })
        expect(refunds(runId)).toHaveLength(1)
      } finally {
        await handler.close()
        await http.close()
        await store.close()
      }
    },
    90_000,
  )
})
