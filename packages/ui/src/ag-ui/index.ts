export { createAgUiHandler } from "./create-ag-ui-handler.js"
export type { AgUiEvent, AgUiInterrupt, AgUiOutcome } from "./ag-ui-event.js"
export type {
  ChatDoorOptions,
  ChatHandlerOptions,
  HostedChatOptions,
  ShorthandChatOptions,
} from "../internal/chat-options.js"
