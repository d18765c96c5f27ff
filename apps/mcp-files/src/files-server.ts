import { createRequire } from "node:module"
import { type McpConnection, connectMcp } from "@toolnexus/mcp"

const require = createRequire(import.meta.url)

/** Tools of the filesystem server that change the folder: each call waits for a human's approval. */
export const WRITES = ["write_file", "edit_file", "create_directory", "move_file"]

/**
 * Starts the MCP filesystem server on `folder` as a child process (the installed package, run
 * with this node; `npx -y @modelcontextprotocol/server-filesystem <folder>` works the same).
 */
export function connectFiles(folder: string): Promise<McpConnection> {
  const entry = require.resolve("@modelcontextprotocol/server-filesystem/dist/index.js")
  return connectMcp({
    servers: { files: { command: process.execPath, args: [entry, folder] } },
    requireApproval: { files: WRITES },
    // A Node process started on the spot: on a busy machine its start alone can outlast the
    // 10 s default, and without it the demo has nothing to show.
    connectTimeoutMs: 30_000,
  })
}
