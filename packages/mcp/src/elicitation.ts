import type { ElicitRequest, ElicitResult } from "@modelcontextprotocol/client"
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/client/validators/ajv"
import type { Answer, Request } from "@toolnexus/core"
import { isPlainObject } from "./config.js"
import { elicitRequestId, elicitationDigest } from "./request-ids.js"

/** @internal A server's elicitation as toolnexus sees it. */
export interface Elicitation {
  digest: string
  request: Request
  params: ElicitRequest["params"]
}

/**
 * @internal Turns a server's `elicitation/create` into a Request: form mode ⇒ `kind: "input"`
 * with the requested schema in `data.schema`; URL mode ⇒ `kind: "authorization"` with `url`.
 */
export function elicitationOf(params: ElicitRequest["params"], server: string, tool: string): Elicitation {
  if (params.mode === "url") {
    const digest = elicitationDigest("url", params.message, undefined)
    return {
      digest,
      params,
      request: {
        id: elicitRequestId(digest),
        kind: "authorization",
        prompt: params.message,
        url: params.url,
        data: { server, tool, elicitationId: params.elicitationId },
      },
    }
  }
  const schema = params.requestedSchema
  const digest = elicitationDigest("form", params.message, schema)
  return {
    digest,
    params,
    request: {
      id: elicitRequestId(digest),
      kind: "input",
      prompt: params.message,
      data: { server, tool, schema },
    },
  }
}

/**
 * @internal What goes back to the server for an answer: `ok` ⇒ accept (form data validated
 * against the requested schema first), reason `"cancelled"` ⇒ cancel, any other `ok: false` ⇒
 * decline. Fields the answer omits get the schema's `default` (SEP-1034), so an accepted form
 * is complete however it was answered (inline or from a stored answer). `problem` is set when
 * the data does not fit: the server is then told `cancel`.
 */
export function elicitResultOf(
  elicitation: Elicitation,
  answer: Answer,
): { result: ElicitResult; problem?: string } {
  if (!answer.ok) return { result: { action: answer.reason === "cancelled" ? "cancel" : "decline" } }
  const { params } = elicitation
  if (params.mode === "url") return { result: { action: "accept" } }
  const content = withDefaults(params.requestedSchema, answer.data ?? {})
  const problem = formProblem(params.requestedSchema, content)
  if (problem) return { result: { action: "cancel" }, problem }
  return { result: { action: "accept", content: content as ElicitResult["content"] } }
}

/**
 * A copy of `content` with the schema's defaults for the properties it lacks. Form schemas are
 * flat (primitive properties only), so only the top level has defaults to apply.
 */
function withDefaults(schema: unknown, content: unknown): unknown {
  if (!isPlainObject(content) || !isPlainObject(schema) || !isPlainObject(schema.properties)) return content
  const filled: Record<string, unknown> = { ...content }
  for (const [name, property] of Object.entries(schema.properties)) {
    if (filled[name] === undefined && isPlainObject(property) && "default" in property)
      filled[name] = property.default
  }
  return filled
}

function formProblem(schema: unknown, content: unknown): string | undefined {
  if (!isPlainObject(content)) return "the answer's data must be an object"
  let check: (input: unknown) => { valid: boolean; errorMessage?: string }
  try {
    // A fresh validator each time: elicitations are rare, and a shared one would keep every
    // schema it ever compiled.
    check = new AjvJsonSchemaValidator().getValidator(
      schema as Parameters<AjvJsonSchemaValidator["getValidator"]>[0],
    )
  } catch {
    return undefined // a schema that does not compile cannot be checked here; the server checks
  }
  const outcome = check(content)
  return outcome.valid ? undefined : outcome.errorMessage
}
