import { type Logger, createToolkit } from "@toolnexus/core"
import { describe, expect, it } from "vitest"
import { createAgUiHandler } from "../src/ag-ui/index.js"
import { createChatHandler } from "../src/ai-sdk/index.js"
import { clientOf, refundTools, useFakeModel, userMessage } from "./helpers.js"

const env = useFakeModel("logger")

let counter = 0
const chatId = () => `log-${++counter}-${Date.now()}`

/** A logger that keeps what it was given. */
function recordingLogger() {
  const entries: { level: "info" | "error"; message: string; data?: Record<string, unknown> }[] = []
  const logger: Logger = {
    info: (message, data) => entries.push({ level: "info", message, ...(data ? { data } : {}) }),
    error: (message, data) => entries.push({ level: "error", message, ...(data ? { data } : {}) }),
  }
  return { logger, entries }
}

const URL_ = "http://127.0.0.1/api/chat"

function chatPost(id: string, text: string, headers: Record<string, string> = {}): Request {
  return new Request(URL_, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ id, messages: [userMessage(text)], trigger: "submit-message" }),
  })
}

function agUiPost(threadId: string, text: string): Request {
  return new Request("http://127.0.0.1/api/agent", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      threadId,
      runId: `r-${threadId}`,
      messages: [{ id: "u1", role: "user", content: text }],
      tools: [],
      context: [],
      state: {},
      forwardedProps: {},
    }),
  })
}

function failingModel() {
  env.fake.reset()
  env.fake.addRule({ match: /.*/, reply: { status: 401, text: "bad key sk-test-secret-key-123" } })
}

describe("the handlers' logger", () => {
  it("a chat run whose model fails is one error entry with its code and conversation, no key", async () => {
    failingModel()
    const { logger, entries } = recordingLogger()
    const handler = createChatHandler({ client: clientOf(env.fake), logger })
    const id = chatId()
    const res = await handler(chatPost(id, "my private question"))
    expect(res.status).toBe(200)
    // The stream ends after the failure is logged: reading it to the end is the wait.
    expect(await res.text()).toContain("TNX_LLM_HTTP")
    expect(entries).toHaveLength(1)
    expect(entries[0]).toMatchObject({ level: "error", data: { code: "TNX_LLM_HTTP", conversationId: id } })
    expect(entries[0]?.message).toContain("TNX_LLM_HTTP")
    expect(JSON.stringify(entries)).not.toContain("sk-test-secret-key-123")
    expect(JSON.stringify(entries)).not.toContain("private question")
  })

  it("an AG-UI run whose model fails is one error entry with its code", async () => {
    failingModel()
    const { logger, entries } = recordingLogger()
    const handler = createAgUiHandler({ client: clientOf(env.fake), logger })
    const thread = chatId()
    const res = await handler(agUiPost(thread, "hi"))
    expect(await res.text()).toContain("RUN_ERROR")
    expect(entries).toEqual([
      expect.objectContaining({ level: "error", data: { code: "TNX_LLM_HTTP", conversationId: thread } }),
    ])
  })

  it("refused posts (400, 403, 415) are one info entry each with status and code, no stack", async () => {
    const { logger, entries } = recordingLogger()
    const handler = createChatHandler({ client: clientOf(env.fake), logger })
    const bad = await handler(
      new Request(URL_, { method: "POST", headers: { "content-type": "application/json" }, body: "{" }),
    )
    const cross = await handler(chatPost(chatId(), "hi", { origin: "https://evil.example" }))
    const form = await handler(
      new Request(URL_, { method: "POST", headers: { "content-type": "text/plain" }, body: "{}" }),
    )
    expect([bad.status, cross.status, form.status]).toEqual([400, 403, 415])
    expect(entries.map((e) => [e.level, e.data?.status, e.data?.code])).toEqual([
      ["info", 400, "TNX_BAD_REQUEST"],
      ["info", 403, "TNX_CROSS_SITE"],
      ["info", 415, "TNX_UNSUPPORTED_MEDIA_TYPE"],
    ])
    expect(JSON.stringify(entries)).not.toMatch(/stack|\n\s+at /)
  })

  it("a new message while the chat waits is one info entry 409 with the conversation", async () => {
    const { logger, entries } = recordingLogger()
    const toolkit = await createToolkit({ extraTools: refundTools().tools })
    const handler = createChatHandler({ client: clientOf(env.fake), toolkit, logger })
    const id = chatId()
    const parked = await handler(chatPost(id, "refund my order"))
    expect(await parked.text()).toContain("tool-approval-request")
    expect(entries).toEqual([])
    const refused = await handler(chatPost(id, "hello?"))
    expect(refused.status).toBe(409)
    expect(entries).toEqual([
      {
        level: "info",
        message: expect.stringContaining("TNX_CONVERSATION_PENDING"),
        data: { status: 409, code: "TNX_CONVERSATION_PENDING", conversationId: id },
      },
    ])
  })

  it("without a logger nothing is logged or thrown; a throwing logger changes no reply", async () => {
    failingModel()
    const silent = createChatHandler({ client: clientOf(env.fake) })
    const failed = await silent(chatPost(chatId(), "hi"))
    expect(await failed.text()).toContain("TNX_LLM_HTTP")
    expect((await silent(chatPost(chatId(), "hi", { origin: "https://evil.example" }))).status).toBe(403)

    const broken: Logger = {
      info: () => {
        throw new Error("logger down")
      },
      error: () => {
        throw new Error("logger down")
      },
    }
    const loud = createChatHandler({ client: clientOf(env.fake), logger: broken })
    const failedToo = await loud(chatPost(chatId(), "hi"))
    expect(await failedToo.text()).toContain("TNX_LLM_HTTP")
    expect((await loud(chatPost(chatId(), "hi", { origin: "https://evil.example" }))).status).toBe(403)
  })
})
