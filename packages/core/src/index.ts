export type {
  AnthropicContentBlock,
  AnthropicMessage,
  Answer,
  EndpointStyle,
  JSONSchema,
  Message,
  OpenAIMessage,
  OpenAIToolCall,
  Request,
  Tool,
  ToolContext,
  ToolResult,
  ToolSource,
  Usage,
} from "./types.js"
export {
  AbortError,
  AnswerConflictError,
  AnswerExpiredError,
  AnswerMismatchError,
  ConfigError,
  LLMHttpError,
  LLMResponseError,
  NetworkError,
  SchemaVersionError,
  StoreError,
  ToolnexusError,
  UnknownRequestError,
} from "./errors.js"
export type { ToolnexusErrorCode } from "./errors.js"
export type { ConversationStore, SaveMeta } from "./store/conversation-store.js"
export { MemoryStore } from "./store/conversation-store.js"
