import { until } from "@toolnexus/agents/engine-testing"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { type Line, answeredTwice, capture, loggerAgents } from "../../agents/test/engine-logger-kit.js"
import { afterAll, beforeAll, expect, it, vi } from "vitest"
import { type RestateWorker, connectRestate, restateAgent, serveRestate } from "../src/index.js"
import { type RestateServer, freePort, startRestateServer } from "./restate-harness.js"

let restate: RestateServer
let llm: FakeLLMServer
let worker: RestateWorker
const workerLines: Line[] = []
const connectionLines: Line[] = []
const printed = vi.fn()

beforeAll(async () => {
  // The SDK prints through console unless given a logger: anything printed is a failure here.
  for (const level of ["log", "info", "warn", "error"] as const)
    vi.spyOn(console, level).mockImplementation((...args) => printed(level, ...args))
  restate = await startRestateServer()
  llm = await createFakeLLMServer()
  worker = await serveRestate({
    agents: (await loggerAgents(llm)).map(restateAgent),
    port: await freePort(),
    admin: restate.admin,
    ingress: restate.ingress,
    logger: capture(workerLines),
  })
}, 120_000)

afterAll(async () => {
  await worker?.close()
  await restate?.stop()
  await llm?.close()
  vi.restoreAllMocks()
})

it("a refused duplicate answer is logged at info without a stack, never as the SDK's warning; a failed run at error with its code", async () => {
  const engine = connectRestate({
    ingress: restate.ingress,
    admin: restate.admin,
    logger: capture(connectionLines),
  })
  try {
    const requestId = await answeredTwice(engine)

    await engine.start("fails", "log-2", "go")
    await expect(engine.result("log-2", { timeoutMs: 20_000 })).rejects.toMatchObject({
      code: "TNX_ENGINE_RUN",
    })
    await until(async () => workerLines.some((l) => l.level === "error"), "the failed run's log line")

    const refused = { level: "info", message: expect.stringContaining(`answer to ${requestId} refused`) }
    expect(workerLines).toContainEqual({ ...refused, data: { requestId, code: "TNX_ANSWER_CONFLICT" } })
    expect(connectionLines).toContainEqual({ ...refused, data: { requestId, code: "TNX_ANSWER_CONFLICT" } })
    expect(workerLines.filter((l) => l.level === "error")).toEqual([
      {
        level: "error",
        message: expect.stringContaining("run log-2 failed"),
        data: { runId: "log-2", agent: "fails", code: "TNX_LLM_HTTP" },
      },
    ])
    // The SDK's own warnings pass (its note on unsigned requests); none is about the refusal or the run.
    expect(
      workerLines.filter((l) => l.level === "warn" && !l.message.includes("request signatures")),
    ).toEqual([])
    for (const line of [...workerLines, ...connectionLines]) expect(line.message).not.toMatch(/\n\s+at /)
    expect(printed).not.toHaveBeenCalled()
  } finally {
    await engine.close()
  }
}, 60_000)
