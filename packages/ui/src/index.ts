export { toNodeListener } from "./to-node-listener.js"
export type {
  ChatDoorOptions,
  ChatHandlerOptions,
  HostedChatOptions,
  ShorthandChatOptions,
} from "./internal/chat-options.js"
export { createAnswerLink } from "./answer-link/create-answer-link.js"
export type { AnswerLinkOptions } from "./answer-link/create-answer-link.js"
export { answerLinkHandler } from "./answer-link/handler.js"
export type { AnswerLinkHandler, AnswerLinkHandlerOptions } from "./answer-link/handler.js"
export type { AnswerLinkSecret } from "./answer-link/token.js"

// Chats that reload (§19): also at the root, beside the doors.
export { loadChat } from "./ai-sdk/load-chat.js"
export type { LoadChatOptions } from "./ai-sdk/load-chat.js"
export type { UIMessage, UIMessagePart, UIToolPart } from "./ai-sdk/ui-message.js"
