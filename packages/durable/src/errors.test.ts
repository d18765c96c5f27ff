import { ToolnexusError, type ToolnexusErrorCode, isToolnexusError } from "@toolnexus/core"
import { expect, it } from "vitest"
import { ClaimLostError, CorruptDataError, RuntimeCollisionError, RuntimeHeldError } from "./errors.js"

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

// Every durable error: its name, its TNX_ code (in core's union) and its message, and core's
// one check recognises it.
const TABLE: { error: ToolnexusError; name: string; code: ToolnexusErrorCode; message: RegExp }[] = [
  {
    error: new RuntimeHeldError("pnd-1", "order-7", "order-7/root/lead.1"),
    name: "RuntimeHeldError",
    code: "TNX_RUNTIME_HELD",
    message:
      /^request pnd-1 \(conversation "order-7\/root\/lead.1"\) is held by the saved runtime "order-7": answer it with deliverAnswer/,
  },
  {
    error: new ClaimLostError("pnd-1", "c1", "the lease ran out"),
    name: "ClaimLostError",
    code: "TNX_CLAIM_LOST",
    message:
      /^the claim on request pnd-1 \(conversation "c1"\) was lost: the lease ran out; the resume stopped/,
  },
  {
    error: new RuntimeCollisionError("k2", "ns/root/lead.1", "pnd-1", "waits on request pnd-1"),
    name: "RuntimeCollisionError",
    code: "TNX_RUNTIME_COLLISION",
    message:
      /^saveRuntime\(store, "k2"\) refused, nothing was written: conversation "ns\/root\/lead.1" waits on request pnd-1; .*deliverAnswer/,
  },
  {
    error: new CorruptDataError({ table: "tnx_messages", key: "c1" }, "not JSON"),
    name: "CorruptDataError",
    code: "TNX_STORE",
    message: /^corrupt row in tnx_messages \(key "c1"\): not JSON$/,
  },
]

it.each(TABLE)(
  "$name: name, code and message; isToolnexusError knows it",
  ({ error, name, code, message }) => {
    expect(error.name).toBe(name)
    expect(error.code).toBe(code)
    expect(error.message).toMatch(message)
    expect(isToolnexusError(error, code)).toBe(true)
    expect(isToolnexusError(error, "TNX_CONFIG")).toBe(false)
    expect((error.constructor as typeof ToolnexusError).isInstance(error)).toBe(true)
  },
)
