import { expect, it } from "vitest"
import * as core from "./index.js"
import * as testing from "./testing/index.js"

// Pins the public surface: adding or removing an export must be a deliberate change here.
it("exports exactly the public runtime surface", () => {
  expect(Object.keys(core).sort()).toEqual([
    "AbortError",
    "AnswerConflictError",
    "AnswerExpiredError",
    "AnswerInvalidError",
    "AnswerMismatchError",
    "ConfigError",
    "ConversationPendingError",
    "LLMHttpError",
    "LLMResponseError",
    "LLMStreamError",
    "MemoryStore",
    "NetworkError",
    "RELAY_KIND",
    "SchemaVersionError",
    "StoreError",
    "TRACE_DATA_KEY",
    "ToolnexusError",
    "UnknownRequestError",
    "assertAnswer",
    "assertAnswerFits",
    "authRequired",
    "compileSchema",
    "createClient",
    "createInProcessClient",
    "createToolkit",
    "defineTool",
    "formatSchemaIssues",
    "httpTool",
    "isExpired",
    "isRelayRequest",
    "isRequest",
    "isToolnexusError",
    "lastAssistantText",
    "pending",
    "pendingOf",
    "registerMetrics",
    "relayAnswer",
    "relayCallsOf",
    "relayTool",
  ])
  expect(Object.keys(testing).sort()).toEqual(["createFakeLLMServer", "transcriptProblems", "userTurns"])
})
