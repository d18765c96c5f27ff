// Per-call cost of validating tool arguments with core's compiled JSON Schema validator
// (`compileSchema`, the check `defineTool` runs before every `run`), against a floor: the
// same checks hand-written for this one schema. Also the one-time compile cost per tool.
//
//   node schema-validation.mjs [--runs 200000] [--rounds 7]
import { parseArgs } from "node:util"
import { compileSchema } from "@toolnexus/core"
import { machineLine, median, printRows } from "./harness.mjs"

const { values } = parseArgs({ options: { runs: { type: "string" }, rounds: { type: "string" } } })
const runs = Number(values.runs ?? 200_000)
const rounds = Number(values.rounds ?? 7)

/** A realistic tool schema: nested object, array of objects, enum, bounds, pattern, a $ref, no extras. */
const schema = {
  type: "object",
  properties: {
    customer: { $ref: "#/$defs/customer" },
    items: {
      type: "array",
      minItems: 1,
      items: {
        type: "object",
        properties: {
          sku: { type: "string", pattern: "^[A-Z0-9-]{2,16}$" },
          qty: { type: "integer", minimum: 1 },
        },
        required: ["sku", "qty"],
        additionalProperties: false,
      },
    },
    priority: { enum: ["low", "normal", "high"] },
    note: { type: ["string", "null"], maxLength: 200 },
  },
  required: ["customer", "items"],
  additionalProperties: false,
  $defs: {
    customer: {
      type: "object",
      properties: { name: { type: "string", minLength: 1 }, email: { type: "string", format: "email" } },
      required: ["name"],
    },
  },
}
const valid = {
  customer: { name: "Ada", email: "ada@example.com" },
  items: [
    { sku: "A-1", qty: 2 },
    { sku: "B-22", qty: 1 },
  ],
  priority: "high",
  note: null,
}
const invalid = { customer: {}, items: [{ sku: "a", qty: 0 }], priority: "urgent", extra: 1 }

const SKU = /^[A-Z0-9-]{2,16}$/u
const isObject = (v) => typeof v === "object" && v !== null && !Array.isArray(v)
/** The floor: this schema's checks written by hand, returning a boolean only. */
function handWritten(args) {
  if (!isObject(args)) return false
  for (const key in args) if (!["customer", "items", "priority", "note"].includes(key)) return false
  const { customer, items, priority, note } = args
  if (!isObject(customer) || typeof customer.name !== "string" || customer.name.length < 1) return false
  if (customer.email !== undefined && typeof customer.email !== "string") return false
  if (!Array.isArray(items) || items.length < 1) return false
  for (const item of items) {
    if (!isObject(item)) return false
    for (const key in item) if (key !== "sku" && key !== "qty") return false
    if (typeof item.sku !== "string" || !SKU.test(item.sku)) return false
    if (!Number.isInteger(item.qty) || item.qty < 1) return false
  }
  if (priority !== undefined && !["low", "normal", "high"].includes(priority)) return false
  if (note !== undefined && note !== null && (typeof note !== "string" || note.length > 200)) return false
  return true
}

const validate = compileSchema(schema)
if (validate(valid).length !== 0 || !handWritten(valid)) throw new Error("the valid arguments must pass")
if (validate(invalid).length === 0 || handWritten(invalid)) throw new Error("the invalid arguments must fail")

function nsPerCall(fn, n) {
  let sink = 0
  const start = process.hrtime.bigint()
  for (let i = 0; i < n; i++) sink += fn() ? 1 : 0
  const ns = Number(process.hrtime.bigint() - start) / n
  if (sink < 0) console.log(sink)
  return ns
}

const variants = {
  "compileSchema (once per tool)": () => compileSchema(schema) !== undefined,
  "validate, valid args": () => validate(valid, "args").length === 0,
  "validate, invalid args (5 issues)": () => validate(invalid, "args").length === 5,
  "floor: hand-written, valid args": () => handWritten(valid),
}
for (const fn of Object.values(variants)) nsPerCall(fn, runs / 4) // warm-up
const samples = Object.fromEntries(Object.keys(variants).map((k) => [k, []]))
for (let r = 0; r < rounds; r++) {
  for (const [name, fn] of Object.entries(variants)) {
    samples[name].push(nsPerCall(fn, name.startsWith("compile") ? runs / 20 : runs))
  }
}
const floor = median(samples["floor: hand-written, valid args"])
console.log(machineLine())
printRows(
  ["what", "µs per call (median)", "vs hand-written floor"],
  Object.entries(samples).map(([name, ns]) => [
    name,
    (median(ns) / 1000).toFixed(3),
    name.startsWith("compile") ? "—" : `${(median(ns) / floor).toFixed(2)}×`,
  ]),
)
