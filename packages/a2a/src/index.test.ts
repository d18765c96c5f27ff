import { ToolnexusError } from "@toolnexus/core"
import { expect, it } from "vitest"
import * as a2a from "./index.js"

// Pins the public surface: adding or removing an export must be a deliberate change here.
it("exports exactly the public A2A surface", () => {
  expect(Object.keys(a2a).sort()).toEqual(["A2AConnectError", "a2aTool", "serveA2A"])
})

it("A2AConnectError carries a stable code and is a toolnexus error", () => {
  const error = new a2a.A2AConnectError("https://agent.example", "the agent card could not be read (404)")
  expect(error).toBeInstanceOf(ToolnexusError)
  expect(a2a.A2AConnectError.isInstance(error)).toBe(true)
  expect([error.name, error.code, error.url, error.reason, error.message]).toEqual([
    "A2AConnectError",
    "TNX_A2A_CONNECT",
    "https://agent.example",
    "the agent card could not be read (404)",
    "A2A agent at https://agent.example: the agent card could not be read (404)",
  ])
  // Identity across copies of the package: the family marker and the code, not the prototype.
  expect(a2a.A2AConnectError.isInstance({ ...error })).toBe(true)
  expect(a2a.A2AConnectError.isInstance({ code: "TNX_A2A_CONNECT" })).toBe(false)
})
