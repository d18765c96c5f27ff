import {
  type InputRequest,
  type InputRequests,
  inputRequired,
  inputResponse,
} from "@modelcontextprotocol/server"
import type { Answer, Request } from "@toolnexus/core"

type FormSchema = Parameters<typeof inputRequired.elicit>[0]["requestedSchema"]

/** The form an approval (and any kind this server does not know) is asked with. */
const APPROVAL_FORM = {
  type: "object",
  properties: {
    approved: { type: "boolean", title: "Approve", description: "Approve (true) or decline (false)" },
    reason: { type: "string", title: "Reason", description: "Why, when declining (optional)" },
  },
  required: ["approved"],
} as const satisfies FormSchema

/** Which elicitation modes a client declared (`elicitation: {}` is form mode, as in 2025-06-18). */
export interface ElicitationSupport {
  form: boolean
  url: boolean
}

/** The elicitation modes in a client's declared capabilities. @internal */
export function elicitationSupport(capabilities: unknown): ElicitationSupport {
  const elicitation = (capabilities as { elicitation?: unknown } | undefined)?.elicitation
  if (elicitation === undefined || elicitation === null || typeof elicitation !== "object")
    return { form: false, url: false }
  const modes = elicitation as { form?: unknown; url?: unknown }
  if (modes.form === undefined && modes.url === undefined) return { form: true, url: false }
  return { form: modes.form !== undefined, url: modes.url !== undefined }
}

/** Whether a client with `support` can be asked `request` through an input request. @internal */
export function canAsk(request: Request, support: ElicitationSupport): boolean {
  return request.kind === "authorization" && typeof request.url === "string" ? support.url : support.form
}

/**
 * One input request per open Request, keyed by the request id: approval ⇒ a form with
 * `approved` and an optional `reason`; `input` ⇒ its schema; `question` ⇒ its options;
 * `authorization` ⇒ URL mode.
 *
 * @internal
 */
export function inputRequestsOf(requests: readonly Request[]): InputRequests {
  // Keyed by request ids, unique per run: on a `{}` each new key adds a map transition V8 keeps
  // (and searches) on the empty object's map; a prototype-less object is a dictionary from the
  // start. It serializes the same.
  const out: Record<string, InputRequest> = Object.create(null)
  for (const request of requests) out[request.id] = inputRequestOf(request)
  return out
}

function inputRequestOf(request: Request): InputRequest {
  const message = request.prompt || `Request ${request.id} (${request.kind})`
  if (request.kind === "authorization" && typeof request.url === "string")
    return inputRequired.elicitUrl({ message, url: request.url })
  if (request.kind === "input")
    return inputRequired.elicit({ message, requestedSchema: inputSchemaOf(request) })
  if (request.kind === "question")
    return inputRequired.elicit({ message, requestedSchema: questionForm(request) })
  return inputRequired.elicit({ message, requestedSchema: APPROVAL_FORM })
}

/** An `input` request's own schema when it is an object schema, else one free-text field. */
function inputSchemaOf(request: Request): FormSchema {
  const schema = request.data?.schema as { type?: unknown; properties?: unknown } | undefined
  if (schema?.type === "object" && schema.properties !== null && typeof schema.properties === "object")
    return schema as FormSchema
  return { type: "object", properties: { value: { type: "string", title: "Answer" } }, required: ["value"] }
}

/** The `question` builtin's questions as one field each (`q1`, `q2`, …), options as an enum. */
function questionForm(request: Request): FormSchema {
  const questions = Array.isArray(request.data?.questions) ? (request.data.questions as unknown[]) : []
  const properties: Record<string, unknown> = {}
  const required: string[] = []
  questions.forEach((q, i) => {
    const item = (q ?? {}) as { question?: unknown; options?: unknown; multiple?: unknown }
    const title = typeof item.question === "string" ? item.question : `Question ${i + 1}`
    const options = Array.isArray(item.options) ? item.options.filter((o) => typeof o === "string") : []
    const key = `q${i + 1}`
    if (options.length === 0) properties[key] = { type: "string", title }
    else if (item.multiple === true)
      properties[key] = { type: "array", title, items: { type: "string", enum: options } }
    else properties[key] = { type: "string", title, enum: options }
    required.push(key)
  })
  if (required.length === 0)
    return { type: "object", properties: { q1: { type: "string", title: "Answer" } } }
  return { type: "object", properties, required } as FormSchema
}

/**
 * The Answer a client's response to `request` gives, or undefined when the retry carried none
 * for it (then nothing is delivered for that request).
 *
 * @internal
 */
export function answerOf(request: { id: string; kind: string }, responses: unknown): Answer | undefined {
  const view = inputResponse(responses as Record<string, unknown> | undefined, request.id)
  if (view.kind !== "elicit") return undefined
  if (view.action === "decline") return { id: request.id, ok: false, reason: "declined" }
  if (view.action === "cancel") return { id: request.id, ok: false, reason: "cancelled" }
  const content = view.content ?? {}
  if (request.kind === "authorization") return { id: request.id, ok: true }
  if (request.kind === "input" || request.kind === "question") {
    const data = request.kind === "question" ? { answers: questionAnswers(content) } : { ...content }
    return { id: request.id, ok: true, data }
  }
  if (content.approved !== true) {
    const reason = typeof content.reason === "string" && content.reason !== "" ? content.reason : "declined"
    return { id: request.id, ok: false, reason }
  }
  return { id: request.id, ok: true }
}

/** `q1`, `q2`, … back in question order. */
function questionAnswers(content: Record<string, unknown>): unknown[] {
  const answers: unknown[] = []
  for (let i = 1; `q${i}` in content; i++) answers.push(content[`q${i}`])
  return answers
}
