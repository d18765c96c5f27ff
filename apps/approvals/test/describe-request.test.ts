import type { Request } from "@toolnexus/core"
import { describe, expect, it } from "vitest"
import { coerceFormValues, describeRequest, formSchemaOf } from "../src/describe-request.js"

const request = (kind: string, data?: Record<string, unknown>): Request => ({
  id: "pnd-1",
  kind,
  prompt: "?",
  ...(data ? { data } : {}),
})

describe("describeRequest", () => {
  it.each([
    ["approval", undefined, "approve"],
    ["authorization", undefined, "authorize"],
    ["question", undefined, "text"],
    ["tool_call", undefined, "text"],
    ["input", undefined, "text"],
    ["input", { schema: { type: "object", properties: { a: { type: "string" } } } }, "form"],
    // A schema the inbox cannot render (no scalar property) falls back to a text answer.
    ["input", { schema: { type: "object", properties: { a: { type: "array" } } } }, "text"],
    ["payment", undefined, "approve"],
  ])("a %s request with %j is answered in mode %s", (kind, data, mode) => {
    expect(describeRequest(request(kind, data)).mode).toBe(mode)
  })

  it("reads the loop's stamps, an MCP elicitation's server and tool, and the agent path", () => {
    expect(
      describeRequest(
        request("approval", { tool: "refund", args: { a: 1 }, callId: "c1", path: ["root", "x.1"] }),
      ),
    ).toEqual({ tool: "refund", args: { a: 1 }, path: ["root", "x.1"], editable: [], mode: "approve" })
    expect(describeRequest(request("input", { server: "crm", tool: "update" })).tool).toBe("crm › update")
  })

  it("edits only existing scalar arguments the tool named; true names them all", () => {
    const args = { amount: 5, note: "x", nested: { a: 1 } }
    expect(
      describeRequest(request("approval", { args, editable: ["amount", "missing", "nested", 3] })).editable,
    ).toEqual(["amount"])
    expect(describeRequest(request("approval", { args, editable: true })).editable).toEqual([
      "amount",
      "note",
    ])
    expect(describeRequest(request("approval", { args, editable: "amount" })).editable).toEqual([])
  })

  it("requests without an args stamp show their other data keys as the arguments", () => {
    expect(describeRequest(request("approval", { orderId: "A-1", callId: "c1" })).args).toEqual({
      orderId: "A-1",
    })
    expect(describeRequest(request("approval", { callId: "c1" })).args).toBeUndefined()
  })
})

describe("coerceFormValues", () => {
  const schema = formSchemaOf({
    type: "object",
    properties: {
      name: { type: "string", minLength: 2, maxLength: 5 },
      age: { type: "integer", minimum: 0, maximum: 150 },
      ratio: { type: "number" },
      ok: { type: "boolean" },
      size: { enum: ["s", "m"] },
    },
    required: ["name", "missing"],
  })
  if (!schema) throw new Error("no schema")

  it("types the values and fills unchecked booleans", () => {
    expect(schema.required).toEqual(["name"])
    expect(coerceFormValues(schema, { name: "Ada", age: "36", ratio: "0.5", size: "m" })).toEqual({
      ok: true,
      data: { name: "Ada", age: 36, ratio: 0.5, ok: false, size: "m" },
    })
  })

  it.each([
    [{}, '"name" is required'],
    [{ name: "A" }, '"name" needs at least 2 characters'],
    [{ name: "Adaline" }, '"name" allows at most 5 characters'],
    [{ name: "Ada", age: "3.5" }, '"age" must be an integer'],
    [{ name: "Ada", age: "-1" }, '"age" must be ≥ 0'],
    [{ name: "Ada", ratio: "lots" }, '"ratio" must be a number'],
    [{ name: "Ada", size: "xl" }, '"size" must be one of "s", "m"'],
    [{ name: { toString: 1 } }, '"name" must be a string'],
  ])("%j ⇒ %s", (values, problem) => {
    expect(coerceFormValues(schema, values as Record<string, unknown>)).toEqual({ ok: false, problem })
  })
})
