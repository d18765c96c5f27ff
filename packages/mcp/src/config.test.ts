import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ConfigError } from "@toolnexus/core"
import { describe, expect, it } from "vitest"
import { connectMcp } from "./connect-mcp.js"
import { loadMcpConfig } from "./config.js"

const dir = mkdtempSync(join(tmpdir(), "tnx-mcp-config-"))

describe("loadMcpConfig", () => {
  it("reads a desktop client's file, a JSON string and an object alike", () => {
    const config = {
      mcpServers: {
        files: {
          command: "npx",
          args: ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
          env: { A: "1" },
        },
        remote: {
          url: "https://mcp.example.com/mcp",
          // biome-ignore lint/suspicious/noTemplateCurlyInString: a ${NAME} placeholder, kept as written
          headers: { Authorization: "Bearer ${TOKEN}" },
          type: "http",
        },
      },
    }
    const path = join(dir, "claude_desktop_config.json")
    writeFileSync(path, JSON.stringify(config))
    const expected = {
      files: {
        command: "npx",
        args: ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
        env: { A: "1" },
      },
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a ${NAME} placeholder, kept as written
      remote: { url: "https://mcp.example.com/mcp", headers: { Authorization: "Bearer ${TOKEN}" } },
    }
    expect(loadMcpConfig(path)).toEqual(expected)
    expect(loadMcpConfig(JSON.stringify(config))).toEqual(expected)
    expect(loadMcpConfig(config)).toEqual(expected)
  })

  it.each([
    ["a missing file", join(dir, "nope.json"), /nope\.json cannot be read/],
    ["invalid JSON", "{ not json", /is not valid JSON/],
    ["no mcpServers", { servers: {} }, /has no "mcpServers" object/],
    ["mcpServers not an object", { mcpServers: [] }, /has no "mcpServers" object/],
    ["an entry that is not an object", { mcpServers: { a: "npx" } }, /server "a" must be an object/],
    [
      "neither command nor url",
      { mcpServers: { a: { args: [] } } },
      /server "a" needs a non-empty "command"/,
    ],
    [
      "both command and url",
      { mcpServers: { a: { command: "x", url: "http://h" } } },
      /has both "command" and "url"/,
    ],
    [
      "args not strings",
      { mcpServers: { a: { command: "x", args: [1] } } },
      /"args" must be an array of strings/,
    ],
    [
      "env values not strings",
      { mcpServers: { a: { command: "x", env: { K: 1 } } } },
      /"env" must be an object of string/,
    ],
    ["a bad url", { mcpServers: { a: { url: "not a url" } } }, /"url" is not a valid URL/],
    ["a non-http url", { mcpServers: { a: { url: "ftp://h/x" } } }, /"url" must be http\(s\)/],
    [
      "headers not strings",
      { mcpServers: { a: { url: "http://h", headers: { X: true } } } },
      /"headers" must be/,
    ],
    ["not an object", "[]", /must be a JSON object/],
  ])("refuses %s with a ConfigError naming the problem", (_what, input, message) => {
    let error: unknown
    try {
      loadMcpConfig(input as string)
    } catch (e) {
      error = e
    }
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as ConfigError).code).toBe("TNX_CONFIG")
    expect((error as Error).message).toMatch(message)
  })

  it("leaves out servers marked disabled", () => {
    const config = { mcpServers: { on: { command: "a" }, off: { command: "b", disabled: true } } }
    expect(loadMcpConfig(config)).toEqual({ on: { command: "a" } })
  })

  it("names the file in file errors", () => {
    const path = join(dir, "broken.json")
    writeFileSync(path, '{"mcpServers": {"x": {}}}')
    expect(() => loadMcpConfig(path)).toThrow(
      `MCP configuration ${path}: server "x" needs a non-empty "command"`,
    )
  })

  it("never echoes env or header values in errors", () => {
    const leaky = { mcpServers: { a: { command: "x", env: { K: "s3cret-value", N: 5 } } } }
    expect(() => loadMcpConfig(leaky)).toThrow(ConfigError)
    try {
      loadMcpConfig(leaky)
    } catch (error) {
      expect((error as Error).message).not.toContain("s3cret-value")
    }
  })
})

describe("connectMcp refuses bad options before starting anything", () => {
  it.each([
    ["no servers object", { servers: undefined }, /"servers" must be an object/],
    ["a malformed server", { servers: { a: { args: [] } } }, /server "a" needs a non-empty "command"/],
    [
      "a policy naming an unknown server",
      { servers: {}, requireApproval: { ghost: true } },
      /names server "ghost", which is not configured/,
    ],
    [
      "a malformed policy rule",
      { servers: { a: { command: "x" } }, requireApproval: { a: "sometimes" } },
      /requireApproval\.a must be/,
    ],
    ["a malformed policy", { servers: {}, requireApproval: 3 }, /requireApproval must be/],
    ["a zero timeout", { servers: {}, connectTimeoutMs: 0 }, /"connectTimeoutMs" must be a positive number/],
  ])("%s", async (_what, options, message) => {
    await expect(connectMcp(options as never)).rejects.toThrow(message)
    await expect(connectMcp(options as never)).rejects.toBeInstanceOf(ConfigError)
  })
})
