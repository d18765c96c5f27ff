export { toNodeListener } from "./to-node-listener.js"
export type { ChatHandlerOptions } from "./internal/chat-options.js"
