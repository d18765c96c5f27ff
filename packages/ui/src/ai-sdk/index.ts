export { createChatHandler } from "./create-chat-handler.js"
export { toUIMessageStream } from "./to-ui-message-stream.js"
export type { ToUIMessageStreamOptions } from "./to-ui-message-stream.js"
export type { UIFinishReason, UIMessageChunk } from "./ui-message-chunk.js"
export type {
  ChatDoorOptions,
  ChatHandlerOptions,
  HostedChatOptions,
  ShorthandChatOptions,
} from "../internal/chat-options.js"
export { loadChat } from "./load-chat.js"
export type { LoadChatOptions } from "./load-chat.js"
export type { UIMessage, UIMessagePart, UIToolPart } from "./ui-message.js"
