export { createMcpServer } from "./create-mcp-server.js"
export type { McpServerOptions, ToolnexusMcpServer } from "./create-mcp-server.js"
