export { createAgUiHandler } from "./create-ag-ui-handler.js"
export type { AgUiEvent, AgUiInterrupt, AgUiOutcome } from "./ag-ui-event.js"
export type { ChatHandlerOptions } from "../internal/chat-options.js"
