import { createOpenAI } from "@ai-sdk/openai"
import { Output, generateText } from "ai"
import { zodResponseFormat } from "openai/helpers/zod"
import { afterEach, describe, expect, it } from "vitest"
import { z } from "zod"
import { OpenAIClient, listen, proxyFor, useHarness } from "./helpers.js"

// A caller's json_schema format becomes the client's `output`: core sends it upstream, validates
// the answer and gives the model one corrective turn.
const h = useHarness()
let listening: Awaited<ReturnType<typeof listen>> | undefined
afterEach(async () => {
  await listening?.close()
  listening = undefined
})

const Weather = z.object({ city: z.string(), celsius: z.number() })

async function baseURL() {
  listening = await listen(proxyFor("openai", h.server, h.store))
  return listening.baseURL
}

describe("structured output", () => {
  it("openai chat.completions.parse() with a zod response_format", async () => {
    h.server.enqueue({ text: '{"city":"Oslo","celsius":-3}' })
    const openai = new OpenAIClient({ baseURL: await baseURL(), apiKey: "k", maxRetries: 0 })
    const res = await openai.chat.completions.parse({
      model: "m",
      messages: [{ role: "user", content: "Oslo weather as JSON" }],
      response_format: zodResponseFormat(Weather, "weather"),
    })
    expect(res.choices[0]?.message.parsed).toEqual({ city: "Oslo", celsius: -3 })
    const sent = h.server.requests[0]?.body.response_format
    expect(sent).toMatchObject({ type: "json_schema", json_schema: { name: "weather", strict: true } })
    expect(sent.json_schema.schema.properties.celsius).toEqual({ type: "number" })
  })

  it("an invalid answer gets one corrective turn upstream; the caller sees the corrected one", async () => {
    h.server.enqueue({ text: '{"city":"Oslo"}' }, { text: '{"city":"Oslo","celsius":1}' })
    const openai = new OpenAIClient({ baseURL: await baseURL(), apiKey: "k", maxRetries: 0 })
    const res = await openai.chat.completions.parse({
      model: "m",
      messages: [{ role: "user", content: "Oslo weather as JSON" }],
      response_format: zodResponseFormat(Weather, "weather"),
    })
    expect(res.choices[0]?.message.parsed).toEqual({ city: "Oslo", celsius: 1 })
    expect(h.server.requests).toHaveLength(2)
  })

  it("the AI SDK's Output.object over the Responses API (text.format)", async () => {
    h.server.enqueue({ text: '{"city":"Rome","celsius":24}' })
    const openai = createOpenAI({ baseURL: await baseURL(), apiKey: "k" })
    const result = await generateText({
      model: openai.responses("m"),
      prompt: "Rome weather",
      output: Output.object({ schema: Weather }),
    })
    expect(result.output).toEqual({ city: "Rome", celsius: 24 })
    expect(h.server.requests[0]?.body.response_format?.type).toBe("json_schema")
  })
})
