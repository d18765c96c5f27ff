import { ConfigError, createClient } from "@toolnexus/core"
import { expect, it } from "vitest"
import { dbosAgent } from "../src/index.js"

const client = createClient({ baseUrl: "http://127.0.0.1:9/v1", style: "openai", model: "m", apiKey: "k" })

it("dbosAgent refuses a bad name, and both or neither of client and runtime, with ConfigError", () => {
  expect(dbosAgent({ name: "refunds_1", client })).toMatchObject({ name: "refunds_1" })
  expect(() => dbosAgent({ name: "bad name", client })).toThrow(ConfigError)
  expect(() => dbosAgent({ name: "x".repeat(65), client })).toThrow(/agent name must match/)
  expect(() => dbosAgent({ name: "none" })).toThrow(/exactly one of `client` and `runtime`/)
  const runtime = { registry: {}, root: "lead" }
  expect(() => dbosAgent({ name: "both", client, runtime })).toThrow(ConfigError)
  expect(() => dbosAgent({ name: "size", client, maxStepBytes: 0 })).toThrow(/maxStepBytes/)
})
