import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { type Line, answeredTwice, capture, loggerAgents } from "../../agents/test/engine-logger-kit.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { connectDbos, dbosAgent, launchDbos } from "../src/index.js"
import { PG_URL, createDatabase } from "./dbos-harness.js"

describe.skipIf(!PG_URL)("connectDbos and launchDbos log refusals at info and failed runs at error", () => {
  let db: Awaited<ReturnType<typeof createDatabase>>
  let llm: FakeLLMServer
  let dbos: { close(): Promise<void> }
  const workerLines: Line[] = []
  const connectionLines: Line[] = []

  beforeAll(async () => {
    db = await createDatabase()
    llm = await createFakeLLMServer()
    dbos = await launchDbos({
      agents: (await loggerAgents(llm)).map(dbosAgent),
      systemDatabaseUrl: db.url,
      logger: capture(workerLines),
    })
  }, 120_000)

  afterAll(async () => {
    await dbos?.close()
    await llm?.close()
    await db?.drop()
  })

  it("a refused duplicate answer at info without a stack; a failed run at error with its code", async () => {
    const engine = connectDbos({ systemDatabaseUrl: db.url, logger: capture(connectionLines) })
    try {
      const requestId = await answeredTwice(engine)
      expect(connectionLines).toEqual([
        {
          level: "info",
          message: expect.stringContaining(`answer to ${requestId} refused`),
          data: { requestId, code: "TNX_ANSWER_CONFLICT" },
        },
      ])

      await engine.start("fails", "log-2", "go")
      await expect(engine.result("log-2", { timeoutMs: 20_000 })).rejects.toMatchObject({
        code: "TNX_ENGINE_RUN",
      })
      expect(workerLines).toEqual([
        {
          level: "error",
          message: expect.stringContaining("run log-2 failed"),
          data: { runId: "log-2", agent: "fails", code: "TNX_LLM_HTTP" },
        },
      ])
      for (const line of [...workerLines, ...connectionLines]) expect(line.message).not.toMatch(/\n\s+at /)
    } finally {
      await engine.close()
    }
  }, 60_000)
})
