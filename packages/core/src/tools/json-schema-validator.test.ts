import { describe, expect, it } from "vitest"
import { ConfigError } from "../errors.js"
import { compileSchema, formatSchemaIssues } from "./json-schema-validator.js"

const messages = (schema: Record<string, unknown>, value: unknown) =>
  formatSchemaIssues(compileSchema(schema)(value, "args"))

describe("compileSchema issues name the path and the expectation", () => {
  it.each([
    [
      { type: "object", properties: { amount: { type: "number", minimum: 1 } } },
      { amount: 0 },
      "args.amount: must be ≥ 1",
    ],
    [{ type: "number", maximum: 10 }, 11, "args: must be ≤ 10"],
    [{ type: "number", exclusiveMinimum: 0 }, 0, "args: must be > 0"],
    [{ type: "number", exclusiveMaximum: 5 }, 5, "args: must be < 5"],
    [{ type: "number", multipleOf: 0.01 }, 1.005, "args: must be a multiple of 0.01"],
    [{ type: "string", minLength: 2 }, "a", "args: must be at least 2 characters long"],
    [{ type: "string", maxLength: 1 }, "ab", "args: must be at most 1 character long"],
    [{ type: "string", pattern: "^[A-Z]{3}$" }, "usd", "args: must match the pattern ^[A-Z]{3}$"],
    [{ type: "array", minItems: 1 }, [], "args: must have at least 1 item"],
    [{ type: "array", maxItems: 2 }, [1, 2, 3], "args: must have at most 2 items"],
    [
      { type: "array", uniqueItems: true },
      [{ a: 1 }, 2, { a: 1 }],
      "args: must not repeat items (items 0 and 2 are equal)",
    ],
    [{ const: "eur" }, "usd", 'args: must be "eur"'],
    [{ enum: ["low", "high"] }, "mid", 'args: must be one of "low", "high"'],
    [{ type: ["string", "null"] }, 3, "args: must be string or null, got number"],
    [{ type: "integer" }, 1.5, "args: must be integer, got number 1.5"],
    [{ type: "string", nullable: true }, false, "args: must be string or null, got boolean"],
    [
      { type: "object", properties: { to: { type: "string" } }, additionalProperties: false },
      { to: "x", cc: "y" },
      "args.cc: is not an allowed property (allowed: to)",
    ],
    [
      { type: "object", additionalProperties: { type: "number" } },
      { a: 1, "b c": "2" },
      'args["b c"]: must be number, got string',
    ],
    [{ type: "object", required: ["to", "amount"] }, { to: "x" }, "args.amount: is required"],
    [
      { type: "array", prefixItems: [{ type: "string" }, { type: "number" }] },
      ["a", "b"],
      "args[1]: must be number, got string",
    ],
    [{ type: "array", items: { type: "integer", minimum: 0 } }, [1, -1], "args[1]: must be ≥ 0"],
    [
      { anyOf: [{ type: "string" }, { type: "number" }] },
      true,
      "args: must be string or number, got boolean",
    ],
    [
      {
        oneOf: [
          { type: "object", properties: { kind: { const: "card" } }, required: ["kind", "last4"] },
          { type: "object", properties: { kind: { const: "iban" } }, required: ["kind", "iban"] },
        ],
      },
      { kind: "card" },
      "args.last4: is required",
    ],
    [
      {
        oneOf: [
          { type: "object", properties: { kind: { const: "card" } } },
          { type: "object", properties: { kind: { const: "iban" } } },
        ],
      },
      { kind: "cash" },
      'args.kind: must be one of "card", "iban"',
    ],
    [
      {
        anyOf: [
          { type: "string", format: "email" },
          { type: "object", required: ["email"] },
        ],
      },
      {},
      "args.email: is required",
    ],
    [
      {
        anyOf: [
          { type: "object", required: ["a"] },
          { type: "object", required: ["b"] },
        ],
      },
      {},
      "args: must match one of the alternatives (#1 a: is required; #2 b: is required)",
    ],
    [
      { oneOf: [{ type: "number" }, { type: "integer" }] },
      3,
      "args: must match exactly one alternative, matched #1 and #2",
    ],
    [{ allOf: [{ minimum: 1 }, { maximum: 3 }] }, 5, "args: must be ≤ 3"],
    [{ not: { type: "null" } }, null, 'args: must not match {"type":"null"}'],
    [
      {
        type: "object",
        properties: { cc: { type: "array", items: { $ref: "#/$defs/email" } } },
        $defs: { email: { type: "string", pattern: "@" } },
      },
      { cc: ["a@b", "nope"] },
      "args.cc[1]: must match the pattern @",
    ],
  ])("%j with %j", (schema, value, expected) => {
    expect(messages(schema, value)).toBe(expected)
  })

  it("reports every issue, not only the first", () => {
    const schema = {
      type: "object",
      properties: { a: { type: "string" }, b: { minimum: 2 } },
      required: ["c"],
    }
    expect(messages(schema, { a: 1, b: 1 })).toBe(
      "args.c: is required; args.a: must be string, got number; args.b: must be ≥ 2",
    )
  })

  it("caps the issues of a wildly wrong value", () => {
    const validate = compileSchema({ type: "array", items: { type: "string" } })
    expect(validate(Array.from({ length: 100 }, (_, i) => i))).toHaveLength(20)
  })

  it("accepts valid values and passes formats through unchecked", () => {
    const validate = compileSchema({
      type: "object",
      properties: {
        when: { type: "string", format: "date-time" },
        tags: { type: "array", items: { type: "string" } },
      },
      required: ["when"],
      additionalProperties: false,
    })
    expect(validate({ when: "not a date", tags: ["x"] })).toEqual([])
  })

  it("counts string length in code points", () => {
    expect(compileSchema({ maxLength: 2 })("💳💳")).toEqual([])
    expect(compileSchema({ minLength: 3 })("💳💳")).toHaveLength(1)
  })

  it("follows recursive local references", () => {
    const tree = {
      $defs: {
        node: {
          type: "object",
          properties: { children: { type: "array", items: { $ref: "#/$defs/node" } } },
        },
      },
      $ref: "#/$defs/node",
    }
    const validate = compileSchema(tree)
    expect(validate({ children: [{ children: [] }] })).toEqual([])
    expect(formatSchemaIssues(validate({ children: [{ children: [5] }] }, "args"))).toBe(
      "args.children[0].children[0]: must be object, got number",
    )
  })

  it("does not change the schema it compiles", () => {
    const schema = { type: ["string"], nullable: true }
    compileSchema(schema)
    expect(schema).toEqual({ type: ["string"], nullable: true })
  })
})

describe("compileSchema refuses schemas it cannot honour", () => {
  it.each([
    [{ $ref: "https://example.com/s.json" }, /only local references/],
    [{ $ref: "#anchor" }, /only local references/],
    [{ $ref: "#/$defs/missing" }, /points nowhere/],
    [{ pattern: "([a-z" }, /pattern: is not a valid regular expression/],
    [{ type: "text" }, /type: must be one of/],
    [{ minLength: -1 }, /minLength: must be a non-negative integer/],
    [{ multipleOf: 0 }, /multipleOf: must be > 0/],
    [{ anyOf: [] }, /anyOf: must be a non-empty array/],
    [{ properties: { a: 5 } }, /properties\/a: a schema must be an object or a boolean/],
  ])("%j", (schema, message) => {
    expect(() => compileSchema(schema)).toThrow(ConfigError)
    expect(() => compileSchema(schema)).toThrow(message)
  })
})
