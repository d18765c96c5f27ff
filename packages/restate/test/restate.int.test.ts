import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { describeEngineContract, describeHostContract } from "@toolnexus/agents/engine-testing"
import { expect, it } from "vitest"
import { connectRestate } from "../src/index.js"
import { freePort, startRestateServer } from "./restate-harness.js"

const here = dirname(fileURLToPath(import.meta.url))
const engine = {
  adapter: join(here, "fixtures", "adapter.mjs"),
  async start() {
    const restate = await startRestateServer()
    // One worker port for the whole suite: the endpoint registered with the admin API.
    const port = await freePort()
    return {
      env: { ADMIN: restate.admin, INGRESS: restate.ingress, PORT: String(port) },
      connect: () => connectRestate({ ingress: restate.ingress, admin: restate.admin }),
      stop: () => restate.stop(),
    }
  },
}

describeEngineContract("@toolnexus/restate on a real Restate server", engine)
describeHostContract("connectRestate as a RunHost", { engine })

it("listPending needs the admin URL (the admin SQL API): ConfigError without it", async () => {
  await expect(connectRestate({ ingress: "http://127.0.0.1:9" }).listPending()).rejects.toMatchObject({
    code: "TNX_CONFIG",
  })
})

it("a bad pollMs is a ConfigError naming it", () => {
  for (const pollMs of [0, -5, 1.5, Number.NaN])
    expect(() => connectRestate({ ingress: "http://127.0.0.1:9", pollMs })).toThrow(/pollMs/)
})
