import { ConfigError } from "../errors.js"
import { isPlainObject } from "../internal/plain-object.js"
import type { JSONSchema } from "../types.js"

/** One way a value fails a schema: where (`args.items[0].qty`) and what was expected. */
export interface SchemaIssue {
  /** Where the failing value is: the validator's `root`, then `.key`, `["odd key"]` and `[index]` steps. */
  path: string
  /** What was expected, phrased to follow the path, e.g. `is required`, `must have at most 3 items`. */
  message: string
}

/**
 * A compiled schema: returns every {@link SchemaIssue} of `value` (none when it is valid).
 * `root` names the value in issue paths; default `"value"`.
 */
export type SchemaValidator = (value: unknown, root?: string) => SchemaIssue[]

/** At most this many issues are reported, so a wildly wrong value gives a readable message. */
const MAX_ISSUES = 20

type Check = (value: unknown, path: string, issues: SchemaIssue[]) => void

/**
 * Compiles a JSON Schema once into a validator for the draft 2020-12 subset that model
 * providers accept for tool parameters and structured output: `type` (one or several, so
 * `["string", "null"]` is nullable; OpenAPI's `nullable: true` is honoured too), `enum`,
 * `const`, `properties`, `required`, `additionalProperties`, `patternProperties`,
 * `minProperties`/`maxProperties`, `items`, `prefixItems`, `minItems`/`maxItems`,
 * `uniqueItems`, `minimum`/`maximum`, `exclusiveMinimum`/`exclusiveMaximum`, `multipleOf`,
 * `minLength`/`maxLength` (in code points), `pattern` (a Unicode regular expression),
 * `anyOf`/`oneOf`/`allOf`/`not`, boolean schemas and local `$ref`s (`#`, `#/$defs/…`,
 * `#/definitions/…`, recursion included). `format` and annotations are passed through
 * unchecked; other keywords are ignored.
 *
 * @param schema The schema (an object, or `true`/`false`).
 * @throws ConfigError for a schema that cannot be compiled: a `$ref` that is not local or
 *   points nowhere, an invalid `pattern`, or a keyword with a value of the wrong kind.
 * @example
 * const validate = compileSchema({ type: "object", properties: { amount: { type: "number", minimum: 1 } } })
 * validate({ amount: 0 }, "args") // [{ path: "args.amount", message: "must be ≥ 1" }]
 */
export function compileSchema(schema: JSONSchema | boolean): SchemaValidator {
  const check = new SchemaCompiler(schema).compile(schema, "#")
  return (value, root = "value") => {
    const issues: SchemaIssue[] = []
    check(value, root, issues)
    return issues.length > MAX_ISSUES ? issues.slice(0, MAX_ISSUES) : issues
  }
}

/** Joins issues into one line the model can act on: `args.amount: must be ≥ 1; args.to: is required`. */
export function formatSchemaIssues(issues: readonly SchemaIssue[]): string {
  return issues.map((issue) => `${issue.path}: ${issue.message}`).join("; ")
}

const NUMBER = 1
const STRING = 2
const ARRAY = 4
const OBJECT = 8
const COMBINATOR = 16
/** `properties`, an object keyword of its own: alone and empty (`{}`), it checks nothing. */
const PROPERTIES = 32
/** Every keyword each family's compiler reads: without any of them it finds nothing to check. */
const FAMILY_OF = new Map<string, number>([
  ["minimum", NUMBER],
  ["maximum", NUMBER],
  ["exclusiveMinimum", NUMBER],
  ["exclusiveMaximum", NUMBER],
  ["multipleOf", NUMBER],
  ["minLength", STRING],
  ["maxLength", STRING],
  ["pattern", STRING],
  ["prefixItems", ARRAY],
  ["items", ARRAY],
  ["minItems", ARRAY],
  ["maxItems", ARRAY],
  ["uniqueItems", ARRAY],
  ["properties", PROPERTIES],
  ["patternProperties", OBJECT],
  ["required", OBJECT],
  ["additionalProperties", OBJECT],
  ["minProperties", OBJECT],
  ["maxProperties", OBJECT],
  ["allOf", COMBINATOR],
  ["anyOf", COMBINATOR],
  ["oneOf", COMBINATOR],
  ["not", COMBINATOR],
])

class SchemaCompiler {
  readonly #root: unknown
  /** Compiled `$ref` targets by pointer, so each is compiled once and recursion terminates. */
  readonly #refs = new Map<string, Check>()

  constructor(root: unknown) {
    this.#root = root
  }

  compile(schema: unknown, at: string): Check {
    if (schema === true) return () => {}
    if (schema === false)
      return (_value, path, issues) => void issues.push({ path, message: "is not allowed" })
    if (!isPlainObject(schema)) throw invalidSchema(at, "a schema must be an object or a boolean")
    const checks: Check[] = []
    if (schema.$ref !== undefined) checks.push(this.#ref(schema.$ref, `${at}/$ref`))
    const typeCheck = compileType(schema, at)
    if (typeCheck) checks.push(typeCheck)
    if (schema.enum !== undefined) checks.push(compileEnum(schema.enum, at))
    if ("const" in schema) checks.push(compileConst(schema.const))
    // Only the keyword families the schema uses are compiled: a tool's `{type: "object",
    // properties: {...}}` never runs (nor has V8 compile) the number, string, array and
    // combinator compilers, each of which would find nothing to check.
    let families = 0
    for (const key in schema) families |= FAMILY_OF.get(key) ?? 0
    // A tool without parameters (`properties: {}` and no other object keyword) skips `#object`
    // (~3 KB compiled in a fresh process's first run, to find nothing).
    if (
      families & PROPERTIES &&
      !(families & OBJECT) &&
      isPlainObject(schema.properties) &&
      Object.keys(schema.properties).length === 0
    )
      families &= ~PROPERTIES
    if (families !== 0) this.#families(schema, at, families, checks)
    if (checks.length === 1) return checks[0]!
    return (value, path, issues) => {
      for (const check of checks) check(value, path, issues)
    }
  }

  /**
   * Adds the checks of the keyword families in `families` (bits of {@link FAMILY_OF}). Its own
   * function: a tool's `{ type: "object", properties: {} }` uses none and never compiles it.
   */
  #families(schema: Record<string, unknown>, at: string, families: number, checks: Check[]): void {
    if (families & NUMBER) {
      const numberChecks = compileNumber(schema, at)
      if (numberChecks) checks.push(numberChecks)
    }
    if (families & STRING) {
      const stringChecks = compileString(schema, at)
      if (stringChecks) checks.push(stringChecks)
    }
    if (families & ARRAY) {
      const arrayChecks = this.#array(schema, at)
      if (arrayChecks) checks.push(arrayChecks)
    }
    if (families & (OBJECT | PROPERTIES)) {
      const objectChecks = this.#object(schema, at)
      if (objectChecks) checks.push(objectChecks)
    }
    if (families & COMBINATOR) checks.push(...this.#combinators(schema, at))
  }

  #ref(ref: unknown, at: string): Check {
    if (typeof ref !== "string" || !(ref === "#" || ref.startsWith("#/"))) {
      throw invalidSchema(at, `only local references ("#/$defs/…") are supported, got ${JSON.stringify(ref)}`)
    }
    let pointer: string
    try {
      pointer = decodeURIComponent(ref)
    } catch {
      throw invalidSchema(at, `$ref ${JSON.stringify(ref)} is not a valid URI fragment`)
    }
    const known = this.#refs.get(pointer)
    if (known) return known
    // Registered before compiling the target, so a schema that refers to itself finds it.
    let target: Check | undefined
    const check: Check = (value, path, issues) => target!(value, path, issues)
    this.#refs.set(pointer, check)
    target = this.compile(lookUp(this.#root, pointer, at), pointer)
    return check
  }

  #array(schema: Record<string, unknown>, at: string): Check | undefined {
    const prefix = schemaList(schema.prefixItems, `${at}/prefixItems`).map((s, i) =>
      this.compile(s, `${at}/prefixItems/${i}`),
    )
    const items = schema.items === undefined ? undefined : this.compile(schema.items, `${at}/items`)
    const minItems = count(schema, "minItems", at)
    const maxItems = count(schema, "maxItems", at)
    const unique = schema.uniqueItems === true
    if (!prefix.length && !items && minItems === undefined && maxItems === undefined && !unique)
      return undefined
    return (value, path, issues) => {
      if (!Array.isArray(value)) return
      if (minItems !== undefined && value.length < minItems)
        issues.push({ path, message: `must have at least ${plural(minItems, "item")}` })
      if (maxItems !== undefined && value.length > maxItems)
        issues.push({ path, message: `must have at most ${plural(maxItems, "item")}` })
      for (let i = 0; i < value.length; i++) {
        const check = i < prefix.length ? prefix[i] : items
        check?.(value[i], `${path}[${i}]`, issues)
      }
      if (unique) {
        const duplicate = findDuplicate(value)
        if (duplicate) {
          issues.push({
            path,
            message: `must not repeat items (items ${duplicate[0]} and ${duplicate[1]} are equal)`,
          })
        }
      }
    }
  }

  #object(schema: Record<string, unknown>, at: string): Check | undefined {
    const properties = isPlainObject(schema.properties) ? schema.properties : {}
    if (schema.properties !== undefined && !isPlainObject(schema.properties))
      throw invalidSchema(`${at}/properties`, "must be an object")
    // Path suffixes are built once here, not on every call.
    const named = Object.entries(properties).map(
      ([key, sub]) => [key, keySuffix(key), this.compile(sub, `${at}/properties/${key}`)] as const,
    )
    const patterns = Object.entries(
      isPlainObject(schema.patternProperties) ? schema.patternProperties : {},
    ).map(
      ([source, sub]) =>
        [
          regExp(source, `${at}/patternProperties`),
          this.compile(sub, `${at}/patternProperties/${source}`),
        ] as const,
    )
    // Absent keywords skip their helpers: a tool's schema is compiled in a fresh process's
    // first run, where every function called is compiled first.
    const required = schema.required === undefined ? [] : stringList(schema.required, `${at}/required`)
    const forbidsOthers = schema.additionalProperties === false
    const additional =
      schema.additionalProperties === undefined || forbidsOthers
        ? undefined
        : this.compile(schema.additionalProperties, `${at}/additionalProperties`)
    const minProperties = schema.minProperties === undefined ? undefined : count(schema, "minProperties", at)
    const maxProperties = schema.maxProperties === undefined ? undefined : count(schema, "maxProperties", at)
    const checksKeys = patterns.length > 0 || additional !== undefined || forbidsOthers
    const countsKeys = minProperties !== undefined || maxProperties !== undefined
    if (!named.length && !required.length && !checksKeys && !countsKeys) return undefined
    return (value, path, issues) => {
      if (!isPlainObject(value)) return
      for (const key of required) {
        if (!Object.hasOwn(value, key)) issues.push({ path: path + keySuffix(key), message: "is required" })
      }
      for (const [key, suffix, check] of named) {
        if (Object.hasOwn(value, key)) check(value[key], path + suffix, issues)
      }
      if (checksKeys) {
        for (const key of Object.keys(value)) {
          let matched = Object.hasOwn(properties, key)
          for (const [pattern, check] of patterns) {
            if (pattern.test(key)) {
              matched = true
              check(value[key], path + keySuffix(key), issues)
            }
          }
          if (matched) continue
          if (forbidsOthers) {
            issues.push({
              path: path + keySuffix(key),
              message: `is not an allowed property${allowedList(properties)}`,
            })
          } else additional?.(value[key], path + keySuffix(key), issues)
        }
      }
      if (!countsKeys) return
      const size = Object.keys(value).length
      if (minProperties !== undefined && size < minProperties)
        issues.push({
          path,
          message: `must have at least ${plural(minProperties, "property", "properties")}`,
        })
      if (maxProperties !== undefined && size > maxProperties)
        issues.push({ path, message: `must have at most ${plural(maxProperties, "property", "properties")}` })
    }
  }

  /**
   * The tag of a union whose alternatives are objects told apart by one property with a
   * `const` value (`{"do": {"const": "run"}}`), with each tag's alternative.
   */
  #discriminator(
    alternatives: unknown[],
  ): { key: string; branches: Map<unknown, number>; message: string } | undefined {
    const resolved = alternatives.map((alternative) => {
      const ref = isPlainObject(alternative) ? alternative.$ref : undefined
      return typeof ref === "string" && ref.startsWith("#")
        ? lookUp(this.#root, decodeURIComponent(ref), "#")
        : alternative
    })
    const first = resolved[0]
    if (!isPlainObject(first) || !isPlainObject(first.properties)) return undefined
    for (const key of Object.keys(first.properties)) {
      const tags = resolved.map((alternative) => {
        const property =
          isPlainObject(alternative) && isPlainObject(alternative.properties)
            ? alternative.properties[key]
            : undefined
        return isPlainObject(property) && "const" in property ? property.const : undefined
      })
      const distinct = new Set(tags)
      if (tags.every((tag) => typeof tag === "string") && distinct.size === tags.length) {
        const message = `must be one of ${tags.map((tag) => JSON.stringify(tag)).join(", ")}`
        return { key, branches: new Map(tags.map((tag, i) => [tag, i])), message }
      }
    }
    return undefined
  }

  #combinators(schema: Record<string, unknown>, at: string): Check[] {
    const checks: Check[] = []
    if (schema.allOf !== undefined) {
      const all = schemaList(schema.allOf, `${at}/allOf`).map((s, i) => this.compile(s, `${at}/allOf/${i}`))
      checks.push((value, path, issues) => {
        for (const check of all) check(value, path, issues)
      })
    }
    for (const keyword of ["anyOf", "oneOf"] as const) {
      if (schema[keyword] === undefined) continue
      const alternatives = schemaList(schema[keyword], `${at}/${keyword}`)
      const branches = alternatives.map((s, i) => this.compile(s, `${at}/${keyword}/${i}`))
      const tagged = this.#discriminator(alternatives)
      checks.push((value, path, issues) => {
        if (tagged && isPlainObject(value) && Object.hasOwn(value, tagged.key)) {
          // A tagged union: only the alternative the tag names applies.
          const branch = tagged.branches.get(value[tagged.key])
          if (branch === undefined) {
            issues.push({ path: path + keySuffix(tagged.key), message: tagged.message })
          } else branches[branch]!(value, path, issues)
          return
        }
        const failures: SchemaIssue[][] = []
        const matched: number[] = []
        for (let i = 0; i < branches.length; i++) {
          const branchIssues: SchemaIssue[] = []
          branches[i]!(value, path, branchIssues)
          if (branchIssues.length === 0) {
            matched.push(i)
            if (keyword === "anyOf") return
          } else failures.push(branchIssues)
        }
        if (matched.length === 0) issues.push(...explainNoMatch(path, failures))
        else if (matched.length > 1)
          issues.push({
            path,
            message: `must match exactly one alternative, matched ${listNumbers(matched)}`,
          })
      })
    }
    if (schema.not !== undefined) {
      const not = this.compile(schema.not, `${at}/not`)
      checks.push((value, path, issues) => {
        const notIssues: SchemaIssue[] = []
        not(value, path, notIssues)
        if (notIssues.length === 0)
          issues.push({ path, message: `must not match ${JSON.stringify(schema.not)}` })
      })
    }
    return checks
  }
}

const TYPES = new Set(["object", "array", "string", "number", "integer", "boolean", "null"])

function compileType(schema: Record<string, unknown>, at: string): Check | undefined {
  if (schema.type === undefined) return undefined
  const declared: unknown = typeof schema.type === "string" ? [schema.type] : schema.type
  if (!Array.isArray(declared) || declared.some((t) => typeof t !== "string" || !TYPES.has(t))) {
    throw invalidSchema(`${at}/type`, `must be one of ${[...TYPES].join(", ")} or a list of them`)
  }
  const types = [...(declared as string[])]
  if (schema.nullable === true && !types.includes("null")) types.push("null")
  const expected = types.join(" or ")
  if (types.length === 1) {
    const type = types[0] as string
    // A tool's schema is an object's: its check runs no `hasType`.
    if (type === "object")
      return (value, path, issues) => {
        if (!isPlainObject(value))
          issues.push({ path, message: `must be ${expected}, got ${describe(value)}` })
      }
    return (value, path, issues) => {
      if (!hasType(type, value)) issues.push({ path, message: `must be ${expected}, got ${describe(value)}` })
    }
  }
  return (value, path, issues) => {
    if (!types.some((type) => hasType(type as string, value)))
      issues.push({ path, message: `must be ${expected}, got ${describe(value)}` })
  }
}

function compileEnum(values: unknown, at: string): Check {
  if (!Array.isArray(values)) throw invalidSchema(`${at}/enum`, "must be an array")
  const message = `must be one of ${values.map((v) => JSON.stringify(v)).join(", ")}`
  const primitives = values.every((v) => v === null || typeof v !== "object")
  if (primitives) {
    const allowed = new Set(values)
    return (value, path, issues) => {
      if (!allowed.has(value)) issues.push({ path, message })
    }
  }
  return (value, path, issues) => {
    if (!values.some((v) => jsonEqual(v, value))) issues.push({ path, message })
  }
}

function compileConst(expected: unknown): Check {
  const message = `must be ${JSON.stringify(expected)}`
  return (value, path, issues) => {
    if (!jsonEqual(expected, value)) issues.push({ path, message })
  }
}

function compileNumber(schema: Record<string, unknown>, at: string): Check | undefined {
  const bounds: [test: (n: number) => boolean, message: string][] = []
  const minimum = number(schema, "minimum", at)
  const maximum = number(schema, "maximum", at)
  // Draft 4's boolean exclusive bounds still appear in schemas written for OpenAPI 3.0.
  const exclusiveMinimum =
    schema.exclusiveMinimum === true
      ? minimum
      : number(schema, "exclusiveMinimum", at, { allowBoolean: true })
  const exclusiveMaximum =
    schema.exclusiveMaximum === true
      ? maximum
      : number(schema, "exclusiveMaximum", at, { allowBoolean: true })
  const multipleOf = number(schema, "multipleOf", at)
  if (multipleOf !== undefined && !(multipleOf > 0)) throw invalidSchema(`${at}/multipleOf`, "must be > 0")
  if (minimum !== undefined && schema.exclusiveMinimum !== true)
    bounds.push([(n) => n >= minimum, `must be ≥ ${minimum}`])
  if (maximum !== undefined && schema.exclusiveMaximum !== true)
    bounds.push([(n) => n <= maximum, `must be ≤ ${maximum}`])
  if (exclusiveMinimum !== undefined)
    bounds.push([(n) => n > exclusiveMinimum, `must be > ${exclusiveMinimum}`])
  if (exclusiveMaximum !== undefined)
    bounds.push([(n) => n < exclusiveMaximum, `must be < ${exclusiveMaximum}`])
  if (multipleOf !== undefined)
    bounds.push([(n) => isMultipleOf(n, multipleOf), `must be a multiple of ${multipleOf}`])
  if (!bounds.length) return undefined
  return (value, path, issues) => {
    if (typeof value !== "number") return
    for (const [test, message] of bounds) if (!test(value)) issues.push({ path, message })
  }
}

function compileString(schema: Record<string, unknown>, at: string): Check | undefined {
  const minLength = count(schema, "minLength", at)
  const maxLength = count(schema, "maxLength", at)
  const pattern = schema.pattern === undefined ? undefined : regExp(schema.pattern, `${at}/pattern`)
  if (minLength === undefined && maxLength === undefined && !pattern) return undefined
  return (value, path, issues) => {
    if (typeof value !== "string") return
    if (minLength !== undefined || maxLength !== undefined) {
      const length = codePoints(value)
      if (minLength !== undefined && length < minLength)
        issues.push({ path, message: `must be at least ${plural(minLength, "character")} long` })
      if (maxLength !== undefined && length > maxLength)
        issues.push({ path, message: `must be at most ${plural(maxLength, "character")} long` })
    }
    if (pattern && !pattern.test(value))
      issues.push({ path, message: `must match the pattern ${pattern.source}` })
  }
}

function hasType(type: string, value: unknown): boolean {
  switch (type) {
    case "object":
      return isPlainObject(value)
    case "array":
      return Array.isArray(value)
    case "string":
      return typeof value === "string"
    case "number":
      return typeof value === "number" && Number.isFinite(value)
    case "integer":
      return Number.isInteger(value)
    case "boolean":
      return typeof value === "boolean"
    default:
      return value === null
  }
}

function describe(value: unknown): string {
  if (value === null) return "null"
  if (Array.isArray(value)) return "array"
  if (typeof value === "number" && Number.isFinite(value) && !Number.isInteger(value))
    return `number ${value}`
  return typeof value
}

const TYPE_MISMATCH = /^must be (.+), got (.+)$/

/** Why no alternative matched, as readable as the alternatives allow. */
function explainNoMatch(path: string, failures: SchemaIssue[][]): SchemaIssue[] {
  const mismatches = failures.map((f) =>
    f.length === 1 && f[0]!.path === path ? TYPE_MISMATCH.exec(f[0]!.message) : null,
  )
  if (mismatches.every((m) => m !== null)) {
    // Every alternative wanted another type: one merged expectation reads best.
    const types = [...new Set(mismatches.map((m) => m![1]))]
    return [{ path, message: `must be ${types.join(" or ")}, got ${mismatches[0]![2]}` }]
  }
  // Alternatives of another type say nothing about this value; if one alternative is left, its issues are the answer.
  const sameType = failures.filter((_, i) => mismatches[i] === null)
  if (sameType.length === 1) return sameType[0]!
  const relative = (issue: SchemaIssue) =>
    `${issue.path === path ? "" : `${issue.path.slice(path.length).replace(/^\./, "")}: `}${issue.message}`
  const reasons = sameType.map((f, i) => `#${i + 1} ${f.slice(0, 3).map(relative).join(", ")}`)
  return [{ path, message: `must match one of the alternatives (${reasons.join("; ")})` }]
}

function lookUp(root: unknown, pointer: string, at: string): unknown {
  let node = root
  const tokens = pointer === "#" ? [] : pointer.slice(2).split("/")
  for (const raw of tokens) {
    const token = raw.replace(/~1/g, "/").replace(/~0/g, "~")
    const next =
      isPlainObject(node) || Array.isArray(node) ? (node as Record<string, unknown>)[token] : undefined
    if (next === undefined || !Object.hasOwn(node as object, token)) {
      throw invalidSchema(at, `$ref ${JSON.stringify(pointer)} points nowhere`)
    }
    node = next
  }
  return node
}

function schemaList(value: unknown, at: string): unknown[] {
  if (value === undefined) return []
  if (!Array.isArray(value) || value.length === 0)
    throw invalidSchema(at, "must be a non-empty array of schemas")
  return value
}

function stringList(value: unknown, at: string): string[] {
  if (value === undefined) return []
  if (!Array.isArray(value) || value.some((v) => typeof v !== "string"))
    throw invalidSchema(at, "must be an array of strings")
  return value
}

function number(
  schema: Record<string, unknown>,
  keyword: string,
  at: string,
  opts: { allowBoolean?: boolean } = {},
): number | undefined {
  const value = schema[keyword]
  if (value === undefined || (opts.allowBoolean && typeof value === "boolean")) return undefined
  if (typeof value !== "number" || !Number.isFinite(value))
    throw invalidSchema(`${at}/${keyword}`, "must be a number")
  return value
}

function count(schema: Record<string, unknown>, keyword: string, at: string): number | undefined {
  const value = number(schema, keyword, at)
  if (value !== undefined && !(Number.isInteger(value) && value >= 0))
    throw invalidSchema(`${at}/${keyword}`, "must be a non-negative integer")
  return value
}

function regExp(source: unknown, at: string): RegExp {
  if (typeof source !== "string") throw invalidSchema(at, "must be a string")
  try {
    return new RegExp(source, "u")
  } catch (error) {
    throw invalidSchema(at, `is not a valid regular expression: ${(error as Error).message}`)
  }
}

function isMultipleOf(value: number, divisor: number): boolean {
  const quotient = value / divisor
  // Decimal divisors (0.01) leave binary rounding noise; accept quotients within it.
  return Number.isInteger(quotient) || Math.abs(quotient - Math.round(quotient)) < 1e-9
}

function codePoints(value: string): number {
  let length = value.length
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i)
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < value.length) {
      const next = value.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) {
        length--
        i++
      }
    }
  }
  return length
}

/** Equality of JSON values: same type, same items in order, same keys in any order. */
function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (Array.isArray(a))
    return Array.isArray(b) && a.length === b.length && a.every((v, i) => jsonEqual(v, b[i]))
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = Object.keys(a)
    return (
      keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]))
    )
  }
  return false
}

function findDuplicate(items: unknown[]): [number, number] | undefined {
  for (let i = 0; i < items.length; i++) {
    for (let j = i + 1; j < items.length; j++) if (jsonEqual(items[i], items[j])) return [i, j]
  }
  return undefined
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/** How a property extends a path: `.name`, or `["b c"]` when the key is not an identifier. */
function keySuffix(key: string): string {
  return IDENTIFIER.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`
}

function allowedList(properties: Record<string, unknown>): string {
  const names = Object.keys(properties)
  return names.length ? ` (allowed: ${names.join(", ")})` : ""
}

function plural(n: number, word: string, many = `${word}s`): string {
  return `${n} ${n === 1 ? word : many}`
}

function listNumbers(indexes: number[]): string {
  return indexes.map((i) => `#${i + 1}`).join(" and ")
}

function invalidSchema(at: string, problem: string): ConfigError {
  return new ConfigError(`invalid JSON Schema at ${at}: ${problem}`)
}
