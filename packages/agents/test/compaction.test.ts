import { SUMMARY_PREFIX } from "@toolnexus/core"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest"
import { createRuntime } from "../src/runtime.js"

let server: FakeLLMServer
beforeAll(async () => {
  server = await createFakeLLMServer()
})
beforeEach(() => server.reset())
afterAll(() => server.close())

it("a handle's transcript is compacted with its def's compaction, which replaces the runtime's", async () => {
  server.addRule({ match: () => true, reply: { text: "noted ".repeat(30) } })
  const summaries: string[] = []
  const rt = createRuntime({
    registry: {
      own: {
        name: "own",
        does: "uses its own compaction",
        compaction: {
          maxTokens: 120,
          summarize: (older) => {
            summaries.push(`own ${older.length}`)
            return "own summary"
          },
        },
      },
      shared: { name: "shared", does: "uses the runtime's" },
    },
    llm: { baseUrl: `${server.url}/v1`, model: "m", apiKey: "k" },
    compaction: {
      maxTokens: 120,
      summarize: (older) => {
        summaries.push(`runtime ${older.length}`)
        return "runtime summary"
      },
    },
  })
  for (const def of ["own", "shared"]) {
    const h = rt.spawn(rt.root, def)
    for (const prompt of ["first question", "second question", "third question"]) {
      rt.wake(h, prompt)
      await rt.wait(h)
    }
  }
  expect(summaries.some((s) => s.startsWith("own"))).toBe(true)
  expect(summaries.some((s) => s.startsWith("runtime"))).toBe(true)
  const last = server.requests.at(-1)?.body.messages as { role: string; content: string }[]
  expect(last.some((m) => m.content === `${SUMMARY_PREFIX}runtime summary`)).toBe(true)
  await rt.close(rt.root)
})
