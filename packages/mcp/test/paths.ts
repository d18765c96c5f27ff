import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"

const require = createRequire(import.meta.url)

/** The entry scripts of the real MCP servers used as stdio children (run with this node). */
export const EVERYTHING = require.resolve("@modelcontextprotocol/server-everything/dist/index.js")
export const FILESYSTEM = require.resolve("@modelcontextprotocol/server-filesystem/dist/index.js")
export const TEST_SERVER = fileURLToPath(new URL("./fixtures/test-server.mjs", import.meta.url))

/** True while a process with this pid exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/**
 * A child's start can take longer than connectMcp's default 10 s on a loaded 2-core CI machine;
 * tests that are not about that limit spread this first (one that is sets its own after it).
 */
export const UNDER_LOAD = { connectTimeoutMs: 60_000 }
