export { a2aTool } from "./a2a-tool.js"
export type { A2AToolOptions } from "./a2a-tool.js"
export { A2AConnectError } from "./errors.js"
export type { A2ATaskState } from "./task-view.js"
