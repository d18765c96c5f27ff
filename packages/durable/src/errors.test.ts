import { ToolnexusError } from "@toolnexus/core"
import { expect, it } from "vitest"
import { RuntimeHeldError } from "./errors.js"

it("RuntimeHeldError names the request, the runtime and where to deliver instead", () => {
  const error = new RuntimeHeldError("pnd-1", "order-7", "root/lead.1/payer.1")
  expect(error).toBeInstanceOf(ToolnexusError)
  expect(ToolnexusError.isInstance(error)).toBe(true)
  expect(RuntimeHeldError.isInstance(error)).toBe(true)
  expect(RuntimeHeldError.isInstance({ ...error, code: "TNX_CONFIG" })).toBe(false)
  expect(error).toMatchObject({
    name: "RuntimeHeldError",
    code: "TNX_RUNTIME_HELD",
    requestId: "pnd-1",
    runtimeKey: "order-7",
    conversationId: "root/lead.1/payer.1",
  })
  expect(error.message).toMatch(/saved runtime "order-7"/)
  expect(error.message).toMatch(/deliverAnswer/)
  expect(error.message).toMatch(/resumeRuntime/)
})
