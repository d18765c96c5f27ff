import { ConfigError, createClient } from "@toolnexus/core"
import { expect, it } from "vitest"
import { restateAgent } from "../src/index.js"

const client = createClient({ baseUrl: "http://127.0.0.1:9/v1", style: "openai", model: "m", apiKey: "k" })

it("restateAgent refuses a bad name, and both or neither of client and runtime, with ConfigError", () => {
  expect(restateAgent({ name: "refunds_1", client })).toMatchObject({ name: "refunds_1" })
  expect(() => restateAgent({ name: "bad name", client })).toThrow(ConfigError)
  expect(() => restateAgent({ name: "x".repeat(65), client })).toThrow(/agent name must match/)
  expect(() => restateAgent({ name: "none" })).toThrow(/exactly one of `client` and `runtime`/)
  const runtime = { registry: {}, root: "lead" }
  expect(() => restateAgent({ name: "both", client, runtime })).toThrow(ConfigError)
  expect(() => restateAgent({ name: "size", client, maxStepBytes: 0 })).toThrow(/maxStepBytes/)
})
