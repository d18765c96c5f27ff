import { expect, it } from "vitest"
import { toolNameFor } from "./tool-names.js"

const VALID = /^[a-zA-Z0-9_-]{1,64}$/

it("joins server and tool with a double underscore", () => {
  expect(toolNameFor("files", "write_file", new Set())).toBe("files__write_file")
})

it("replaces characters providers refuse", () => {
  expect(toolNameFor("my server.v2", "get/item:by id", new Set())).toBe("my_server_v2__get_item_by_id")
  expect(toolNameFor("ü", "é", new Set())).toBe("____")
})

it("shortens long names to 64 characters, keeping distinct names apart", () => {
  const a = toolNameFor("s".repeat(40), `${"t".repeat(40)}a`, new Set())
  const b = toolNameFor("s".repeat(40), `${"t".repeat(40)}b`, new Set())
  expect(a).toMatch(VALID)
  expect(a).toHaveLength(64)
  expect(a).not.toBe(b)
})

it("makes names unique against those taken", () => {
  const taken = new Set(["a__b", "a__b_2"])
  expect(toolNameFor("a", "b", taken)).toBe("a__b_3")
  // "a.b" and "a_b" clean to the same name: the second gets a suffix.
  expect(toolNameFor("x", "a_b", new Set([toolNameFor("x", "a.b", new Set())]))).toBe("x__a_b_2")
  const long = new Set([toolNameFor("s".repeat(70), "t", new Set())])
  const second = toolNameFor("s".repeat(70), "t", long)
  expect(second).toMatch(VALID)
  expect(second.endsWith("_2")).toBe(true)
})
