import { describe, expect, expectTypeOf, it } from "vitest"
import { z } from "zod"
import { ConfigError } from "../errors.js"
import type { ToolContext } from "../types.js"
import { defineTool } from "./define-tool.js"

const orderSchema = {
  type: "object",
  properties: {
    customer: {
      type: "object",
      properties: { name: { type: "string" }, vip: { type: "boolean" } },
      required: ["name"],
    },
    items: {
      type: "array",
      items: {
        type: "object",
        properties: { sku: { type: "string" }, qty: { type: "integer" } },
        required: ["sku", "qty"],
      },
    },
    priority: { enum: ["low", "high"] },
  },
  required: ["customer", "items"],
}

describe("defineTool with a JSON Schema", () => {
  const calls: unknown[] = []
  const order = defineTool({
    name: "place_order",
    description: "Place an order",
    inputSchema: orderSchema,
    run: (args) => {
      calls.push(args)
      return "placed"
    },
  })

  it("is a native tool carrying its schema", () => {
    expect(order).toMatchObject({ name: "place_order", description: "Place an order", source: "native" })
    expect(order.inputSchema).toEqual(orderSchema)
  })

  it("runs with valid arguments", async () => {
    const args = { customer: { name: "Ada" }, items: [{ sku: "A1", qty: 2 }], priority: "high" }
    expect(await order.execute(args)).toEqual({ output: "placed", isError: false })
    expect(calls.at(-1)).toEqual(args)
  })

  it.each([
    [{ items: [] }, "args.customer: is required"],
    [{ customer: { name: 5 }, items: [] }, "args.customer.name: must be string, got number"],
    [{ customer: {}, items: [] }, "args.customer.name: is required"],
    [{ customer: { name: "A" }, items: "x" }, "args.items: must be array, got string"],
    [
      { customer: { name: "A" }, items: [{ sku: "A", qty: 1 }, { sku: "B" }] },
      "args.items[1].qty: is required",
    ],
    [
      { customer: { name: "A" }, items: [{ sku: "A", qty: 1.5 }] },
      "args.items[0].qty: must be integer, got number 1.5",
    ],
    [
      { customer: { name: "A" }, items: [], priority: "urgent" },
      'args.priority: must be one of "low", "high"',
    ],
    [{ customer: null, items: [] }, "args.customer: must be object, got null"],
  ])("refuses %j before run, naming the path", async (args, problem) => {
    const before = calls.length
    const result = await order.execute(args as Record<string, unknown>)
    expect(result.isError).toBe(true)
    expect(result.output).toBe(`invalid arguments: ${problem}`)
    expect(calls).toHaveLength(before)
  })

  it("passes the context to run, and an empty one when none is given", async () => {
    const seen: ToolContext[] = []
    const tool = defineTool({
      name: "ctx_probe",
      description: "",
      inputSchema: { type: "object" },
      run: (_args, toolCtx) => {
        seen.push(toolCtx)
        return "ok"
      },
    })
    const answer = { id: "pnd-1", ok: true }
    await tool.execute({}, { callId: "c1", idempotencyKey: "conv:c1", answer })
    await tool.execute({})
    expect(seen[0]).toEqual({ callId: "c1", idempotencyKey: "conv:c1", answer })
    expect(seen[1]).toEqual({})
  })
})

describe("defineTool validates the whole JSON Schema subset before run", () => {
  const transfer = defineTool({
    name: "transfer",
    description: "Move money",
    inputSchema: {
      type: "object",
      properties: {
        amount: { type: "number", minimum: 1 },
        currency: { type: "string", pattern: "^[A-Z]{3}$" },
        to: { $ref: "#/$defs/account" },
      },
      required: ["amount", "to"],
      additionalProperties: false,
      $defs: { account: { anyOf: [{ type: "string", minLength: 4 }, { type: "integer" }] } },
    },
    run: () => "moved",
  })

  it("refuses every problem at once with paths the model can act on", async () => {
    const result = await transfer.execute({ amount: 0, currency: "usd", to: "ab", memo: "x" })
    expect(result).toEqual({
      isError: true,
      output:
        "invalid arguments: args.amount: must be ≥ 1; args.currency: must match the pattern ^[A-Z]{3}$; " +
        "args.to: must be at least 4 characters long; " +
        "args.memo: is not an allowed property (allowed: amount, currency, to)",
    })
  })

  it("runs with valid arguments", async () => {
    expect(await transfer.execute({ amount: 5, currency: "EUR", to: 1234 })).toEqual({
      output: "moved",
      isError: false,
    })
  })

  it("refuses a schema it cannot compile at construction, naming the tool", () => {
    const make = () =>
      defineTool({ name: "bad", description: "", inputSchema: { $ref: "#/$defs/nope" }, run: () => "" })
    expect(make).toThrow(ConfigError)
    expect(make).toThrow(
      /^tool bad: invalid JSON Schema at #\/\$ref: \$ref "#\/\$defs\/nope" points nowhere$/,
    )
  })
})

describe("defineTool with a Zod 4 schema", () => {
  const schema = z.object({
    city: z.string().min(2),
    days: z.number().int().positive().default(1),
    units: z.enum(["metric", "imperial"]).optional(),
  })
  const received: unknown[] = []
  const weather = defineTool({
    name: "weather",
    description: "Forecast",
    inputSchema: schema,
    run: (args) => {
      // `run` is typed from the schema.
      expectTypeOf(args).toEqualTypeOf<z.output<typeof schema>>()
      received.push(args)
      return `${args.city.toUpperCase()} for ${args.days} day(s)`
    },
  })

  it("exports JSON Schema without $schema", () => {
    expect(weather.inputSchema).not.toHaveProperty("$schema")
    expect(weather.inputSchema).toMatchObject({
      type: "object",
      properties: { city: { type: "string", minLength: 2 }, units: { enum: ["metric", "imperial"] } },
      required: expect.arrayContaining(["city"]),
    })
    expect(JSON.parse(JSON.stringify(weather.inputSchema))).toEqual(weather.inputSchema)
  })

  it("validates before run and hands run the parsed value (defaults applied)", async () => {
    expect(await weather.execute({ city: "Oslo" })).toEqual({ output: "OSLO for 1 day(s)", isError: false })
    expect(received.at(-1)).toEqual({ city: "Oslo", days: 1 })
  })

  it.each([
    [{ days: 2 }, "city"],
    [{ city: 7 }, "city"],
    [{ city: "Rome", days: -1 }, "days"],
    [{ city: "Rome", days: 1.5 }, "days"],
    [{ city: "Rome", units: "kelvin" }, "units"],
  ])("refuses %j with an error result naming %s; run is not called", async (args, field) => {
    const before = received.length
    const result = await weather.execute(args as Record<string, unknown>)
    expect(result.isError).toBe(true)
    expect(result.output).toMatch(new RegExp(`^invalid arguments: .*\\b${field}: `))
    expect(received).toHaveLength(before)
  })

  it("names nested paths", async () => {
    const nested = defineTool({
      name: "nested",
      description: "",
      inputSchema: z.object({ rows: z.array(z.object({ id: z.string() })) }),
      run: () => "ok",
    })
    const result = await nested.execute({ rows: [{ id: "a" }, { id: 2 }] })
    expect(result.isError).toBe(true)
    expect(result.output).toMatch(/rows\.1\.id: /)
  })
})

describe("what run returns or throws", () => {
  const make = (run: () => unknown) =>
    defineTool({ name: "t", description: "", inputSchema: { type: "object" }, run: run as never })

  it("a string is an ordinary result", async () => {
    expect(await make(() => "hello").execute({})).toEqual({ output: "hello", isError: false })
    expect(await make(async () => "later").execute({})).toEqual({ output: "later", isError: false })
  })

  it("a ToolResult is kept, with metadata", async () => {
    const result = { output: "x", isError: true, metadata: { status: 404 } }
    expect(await make(() => result).execute({})).toEqual(result)
    expect(await make(() => ({ output: "y" })).execute({})).toEqual({ output: "y", isError: false })
  })

  it("a throw becomes an error result with the message; the tool never rejects", async () => {
    expect(
      await make(() => {
        throw new Error("disk full")
      }).execute({}),
    ).toEqual({ output: "disk full", isError: true })
    expect(await make(() => Promise.reject(new Error("async boom"))).execute({})).toEqual({
      output: "async boom",
      isError: true,
    })
    expect(
      await make(() => {
        throw "a string"
      }).execute({}),
    ).toEqual({ output: "a string", isError: true })
  })
})

describe("construction", () => {
  const base = { description: "d", inputSchema: { type: "object" }, run: () => "ok" }

  it.each(["", "has space", "dot.name", "slash/name", "ünïcode", "a".repeat(65), "semi;colon"])(
    "refuses the name %j with ConfigError",
    (name) => {
      expect(() => defineTool({ ...base, name })).toThrow(ConfigError)
    },
  )

  it("accepts names of letters, digits, _ and - up to 64 characters", () => {
    for (const name of ["a", "get_weather", "get-weather", "Tool42", "a".repeat(64)]) {
      expect(defineTool({ ...base, name }).name).toBe(name)
    }
  })

  it("refuses a missing run or a schema that is not an object", () => {
    expect(() => defineTool({ ...base, name: "x", run: undefined as never })).toThrow(ConfigError)
    expect(() => defineTool({ ...base, name: "x", inputSchema: "object" as never })).toThrow(ConfigError)
    expect(() => defineTool({ ...base, name: "x", inputSchema: null as never })).toThrow(ConfigError)
  })
})
