export { createMcpServer } from "./create-mcp-server.js"
export { hostedToolAgents } from "./hosted-tools.js"
export type { HostedToolAgentsOptions, ToolAgent } from "./hosted-tools.js"
export type { McpServerOptions, ToolnexusMcpServer } from "./create-mcp-server.js"
