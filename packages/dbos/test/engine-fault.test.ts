import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, expect, it } from "vitest"
import { dbosAgent } from "../src/index.js"
import { dbosExecutor } from "../src/launch-dbos.js"
import { runEngineAgent } from "@toolnexus/core/engine"
import { runEngineTree } from "@toolnexus/agents"
import * as sdk from "@dbos-inc/dbos-sdk"

let llm: FakeLLMServer
beforeAll(async () => {
  llm = await createFakeLLMServer()
})
afterAll(() => llm.close())

it("a DBOS error in a child's step fails the whole run: the parent, which sees the child's failure as data, runs no further step", async () => {
  llm.addRule({
    match: (req) => req.system === "lead" && req.toolResults.length === 0,
    reply: { toolCalls: [{ id: "k1", name: "task", arguments: { agent: "payer", prompt: "pay" } }] },
  })
  llm.addRule({ match: (req) => req.system === "lead", reply: { text: "lead went on" } })
  llm.addRule({ match: (req) => req.system === "payer", reply: { text: "paid" } })
  const agent = dbosAgent({
    name: "tree",
    runtime: {
      root: "lead",
      llm: { baseUrl: `${llm.url}/v1`, style: "openai", model: "m", apiKey: "k" },
      registry: {
        lead: { name: "lead", does: "leads", soul: "lead", team: ["payer"] },
        payer: { name: "payer", does: "pays", soul: "payer" },
      },
    },
  })
  const steps: string[] = []
  // DBOS in memory: every step runs, but the child's first turn meets the run's cancellation once.
  const DBOS = {
    async runStep<T>(fn: () => Promise<T>, opts?: { name?: string }): Promise<T> {
      const name = opts?.name ?? ""
      steps.push(name)
      if (name === "root/lead.1/payer.1/llm:1") throw new sdk.Error.DBOSWorkflowCancelledError("run-fault")
      return fn()
    },
    recv: async () => null,
  } as unknown as Parameters<typeof dbosExecutor>[0]["DBOS"]
  const pool = { query: async () => ({ rows: [], rowCount: 0 }) } as never
  const executor = dbosExecutor({ DBOS, Error: sdk.Error }, pool, "toolnexus", "run-fault", agent)
  const run = runEngineAgent(agent, "go", executor, async () => runEngineTree)
  await expect(run).rejects.toBeInstanceOf(sdk.Error.DBOSWorkflowCancelledError)
  expect(steps).toEqual(["root/lead.1/llm:1", "root/lead.1/payer.1/llm:1"])
  expect(llm.requests.filter((r) => r.system === "lead")).toHaveLength(1)
})
