export { createFakeLLMServer } from "./fake-llm-server.js"
export type {
  FakeLLMServer,
  FakeLLMServerOptions,
  FakeReply,
  FakeReplySource,
  FakeRule,
  FakeToolCall,
} from "./fake-llm-server.js"
export type { FakeRequestView, FakeToolResult } from "./request-view.js"
export { transcriptProblems, userTurns } from "./transcript.js"
