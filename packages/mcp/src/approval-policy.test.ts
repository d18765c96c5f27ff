import { expect, it } from "vitest"
import { type ApprovalPolicy, type ToolAnnotations, needsApproval } from "./approval-policy.js"

const readOnly = { readOnlyHint: true }
const safeWrite = { destructiveHint: false }
const destructive = { destructiveHint: true }

it.each<[string, ApprovalPolicy | undefined, string, string, ToolAnnotations | undefined, boolean]>([
  ["no policy", undefined, "fs", "write_file", undefined, false],
  ["false", false, "fs", "write_file", undefined, false],
  ["true", true, "fs", "read_file", readOnly, true],
  ["destructive: no annotations (MCP default)", "destructive", "fs", "write_file", undefined, true],
  ["destructive: read-only", "destructive", "fs", "read_file", readOnly, false],
  ["destructive: destructiveHint false", "destructive", "fs", "append", safeWrite, false],
  [
    "destructive: read-only wins over destructiveHint",
    "destructive",
    "fs",
    "x",
    { readOnlyHint: true, destructiveHint: true },
    false,
  ],
  ["destructive: destructiveHint true", "destructive", "fs", "rm", destructive, true],
  ["per server: listed tool", { fs: ["write_file"] }, "fs", "write_file", readOnly, true],
  ["per server: unlisted tool", { fs: ["write_file"] }, "fs", "read_file", undefined, false],
  ["per server: other server", { fs: true }, "web", "fetch", undefined, false],
  ["per server: destructive", { fs: "destructive" }, "fs", "read_file", readOnly, false],
  ["per server: true", { fs: true }, "fs", "read_file", readOnly, true],
])("%s", (_what, policy, server, tool, annotations, expected) => {
  expect(needsApproval(policy, server, tool, {}, annotations)).toBe(expected)
})

it("a function decides per call with the server, the tool and the args", () => {
  const seen: unknown[] = []
  const policy: ApprovalPolicy = (server, tool, args) => {
    seen.push([server, tool, args])
    return Number(args.amount) > 100
  }
  expect(needsApproval(policy, "bank", "pay", { amount: 500 }, undefined)).toBe(true)
  expect(needsApproval(policy, "bank", "pay", { amount: 5 }, undefined)).toBe(false)
  expect(seen[0]).toEqual(["bank", "pay", { amount: 500 }])
})
