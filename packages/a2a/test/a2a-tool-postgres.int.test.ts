import { randomUUID } from "node:crypto"
import { AnswerConflictError, type Request, createToolkit } from "@toolnexus/core"
import { deliverAnswer } from "@toolnexus/durable"
import { PostgresStore } from "@toolnexus/durable/postgres"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import { a2aTool } from "../src/a2a-tool.js"
import { scriptedClient } from "./helpers.js"
import { type Emit, TaskState, startRemoteAgent } from "./remote-agent.js"

// A remote agent's question parked on PostgreSQL and answered by another "process" (its own
// pool, client, toolkit and tool): one follow-up on the same remote task; a redelivery is
// refused before the tool runs. A schema of our own per run, dropped afterwards.

const url = process.env.TOOLNEXUS_TEST_PG_URL
const schema = `tnx_a2a_out_${randomUUID().replaceAll("-", "").slice(0, 16)}`
afterAll(async () => {
  if (!url) return
  const admin = new pg.Pool({ connectionString: url, max: 1 })
  try {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  } finally {
    await admin.end()
  }
})

const seatScript = () => {
  const turns = new Map<string, number>()
  return (e: Emit) => {
    const turn = (turns.get(e.taskId) ?? 0) + 1
    turns.set(e.taskId, turn)
    if (turn === 1) return e.status(TaskState.TASK_STATE_INPUT_REQUIRED, "Which seat?")
    e.artifact(`booked ${e.text}`, { lastChunk: true })
    e.status(TaskState.TASK_STATE_COMPLETED)
  }
}

async function processOn(remoteUrl: string) {
  const store = new PostgresStore({ connectionString: url, schema })
  const toolkit = await createToolkit({
    extraTools: [await a2aTool({ url: remoteUrl, name: "travel", pollIntervalMs: 5 })],
  })
  return { store, toolkit, client: scriptedClient("travel", "book a seat", { store }) }
}

describe.skipIf(!url)("a2aTool parked on PostgreSQL", () => {
  it("answered by another process ⇒ one follow-up on the same task; a redelivery is refused", async () => {
    const remote = await startRemoteAgent({ streaming: true })
    remote.setScript(seatScript())
    try {
      const first = await processOn(remote.url)
      const halted = await first.client.ask("go", { id: `trip-${randomUUID()}`, toolkit: first.toolkit })
      const request = halted.pending as Request
      expect(request).toMatchObject({ kind: "input", data: { agent: "travel" } })
      await first.store.close()
      const second = await processOn(remote.url)
      const answer = { id: request.id, ok: true, data: { text: "7C" } }
      const delivered = await deliverAnswer(second.store, answer, {
        client: second.client,
        toolkit: second.toolkit,
      })
      expect(delivered.result.text).toBe("final: booked 7C")
      await expect(
        deliverAnswer(second.store, answer, { client: second.client, toolkit: second.toolkit }),
      ).rejects.toBeInstanceOf(AnswerConflictError)
      expect(remote.received).toHaveLength(2)
      expect(remote.received[1]).toMatchObject({ taskId: request.data?.taskId, messageId: request.id })
      await second.store.close()
    } finally {
      await remote.close()
    }
  })
})
