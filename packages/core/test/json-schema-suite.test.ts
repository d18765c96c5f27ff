import { readFileSync, readdirSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { compileSchema } from "../src/tools/json-schema-validator.js"

// The official JSON Schema Test Suite (draft 2020-12), run for every keyword the validator
// claims. A case is skipped only when its schema uses something outside that subset (remote
// or anchored references, `$id`, `contains`, `unevaluated*`, …): those are not claimed.
const folder = join(import.meta.dirname, "fixtures/json-schema-test-suite")

const SUPPORTED = new Set([
  ...["type", "enum", "const", "properties", "required", "additionalProperties", "patternProperties"],
  ...["minProperties", "maxProperties", "items", "prefixItems", "minItems", "maxItems", "uniqueItems"],
  ...["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength"],
  ...["pattern", "format", "anyOf", "oneOf", "allOf", "not", "$ref", "$defs", "definitions"],
  ...["$schema", "$comment", "title", "description", "default", "examples"],
])
/** Keywords whose value is a map of names to schemas: the names are not keywords. */
const SCHEMA_MAPS = new Set(["properties", "patternProperties", "$defs", "definitions"])

interface SuiteGroup {
  description: string
  schema: unknown
  tests: { description: string; data: unknown; valid: boolean }[]
}

function isSupported(schema: unknown, inMap = false): boolean {
  if (Array.isArray(schema)) return schema.every((s) => isSupported(s))
  if (typeof schema !== "object" || schema === null) return true
  return Object.entries(schema).every(([key, value]) => {
    if (inMap) return isSupported(value)
    if (!SUPPORTED.has(key)) return false
    if (key === "$ref") return typeof value === "string" && value.startsWith("#")
    if (key === "enum" || key === "const" || key === "default" || key === "examples") return true
    return isSupported(value, SCHEMA_MAPS.has(key))
  })
}

const files = readdirSync(folder).filter((f) => f.endsWith(".json"))
let ran = 0

for (const file of files) {
  const groups = JSON.parse(readFileSync(join(folder, file), "utf8")) as SuiteGroup[]
  describe(file, () => {
    for (const group of groups) {
      const run = isSupported(group.schema) ? it : it.skip
      if (isSupported(group.schema)) ran += group.tests.length
      run(group.description, () => {
        const validate = compileSchema(group.schema as Record<string, unknown>)
        for (const test of group.tests) {
          const issues = validate(test.data)
          expect({ test: test.description, valid: issues.length === 0 }).toEqual({
            test: test.description,
            valid: test.valid,
          })
        }
      })
    }
  })
}

it("runs most of the suite's cases for the claimed keywords", () => {
  expect(files.length).toBeGreaterThan(25)
  expect(ran).toBeGreaterThan(500)
})
