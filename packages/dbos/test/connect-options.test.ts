import { expect, it } from "vitest"
import { connectDbos } from "../src/index.js"

it("a bad pollMs or namespace is a ConfigError naming it, before any connection", () => {
  const systemDatabaseUrl = "postgres://nobody@127.0.0.1:9/none"
  for (const pollMs of [0, -5, 1.5, Number.NaN])
    expect(() => connectDbos({ systemDatabaseUrl, pollMs })).toThrow(
      expect.objectContaining({ code: "TNX_CONFIG", message: expect.stringContaining("pollMs") }),
    )
  expect(() => connectDbos({ systemDatabaseUrl, namespace: "Bad-Name" })).toThrow(
    expect.objectContaining({ code: "TNX_CONFIG" }),
  )
})
