import { type Answer, AnswerInvalidError, type Request, assertAnswer } from "@toolnexus/core"
import { coerceFormValues, describeRequest, isPlainObject } from "./describe-request.js"
import { HttpError } from "./http-error.js"

const MAX_REASON_CHARS = 500

/**
 * Validates an answer body: `{ok, reason?, data?}`, plus `id` when `pathId` is absent
 * (webhooks). `reason` is only allowed with `ok: false`, as the wire contract says.
 *
 * @throws HttpError 400 `invalid_body` naming the problem.
 */
export function parseAnswer(body: unknown, pathId?: string): Answer {
  const shape = pathId === undefined ? '{"id", "ok", "reason"?, "data"?}' : '{"ok", "reason"?, "data"?}'
  const invalid = (why: string) => new HttpError(400, "invalid_body", `${why}; expected ${shape}`)
  if (!isPlainObject(body)) throw invalid("the body is not a JSON object")
  const id = pathId ?? body.id
  if (typeof id !== "string" || id === "" || id.length > 200) throw invalid('"id" must be a non-empty string')
  if (pathId !== undefined && body.id !== undefined && body.id !== pathId) {
    throw invalid('"id" in the body differs from the request id in the path')
  }
  if (typeof body.ok !== "boolean") throw invalid('"ok" must be true or false')
  const answer: Answer = { id, ok: body.ok }
  if (body.reason !== undefined) {
    if (typeof body.reason !== "string") throw invalid('"reason" must be a string')
    if (body.ok) throw invalid('"reason" is only allowed when "ok" is false')
    if (body.reason.length > MAX_REASON_CHARS)
      throw invalid(`"reason" is limited to ${MAX_REASON_CHARS} characters`)
    answer.reason = body.reason.trim() || "declined"
  }
  if (body.data !== undefined) {
    if (!isPlainObject(body.data)) throw invalid('"data" must be a JSON object')
    answer.data = body.data
  }
  // Core's rules on top (how deep `data` may nest for a store to write it), before anything is read or written.
  try {
    assertAnswer(answer)
  } catch (error) {
    if (AnswerInvalidError.isInstance(error)) throw invalid(error.message)
    throw error
  }
  return answer
}

/**
 * Checks an approval against what the request allows and completes it: edited arguments
 * (`data.args`) only for the arguments the tool marked editable, with their original types,
 * merged over the original arguments; form data validated and typed by `data.schema`.
 *
 * @throws HttpError 400 `invalid_edit` or `invalid_form`.
 */
export function fitAnswerToRequest(answer: Answer, request: Request): Answer {
  if (!answer.ok || answer.data === undefined) return answer
  const described = describeRequest(request)
  if (described.schema) {
    const checked = coerceFormValues(described.schema, answer.data)
    if (!checked.ok) throw new HttpError(400, "invalid_form", checked.problem)
    return { ...answer, data: checked.data }
  }
  const edits = answer.data.args
  if (edits === undefined) return answer
  if (!isPlainObject(edits)) throw new HttpError(400, "invalid_edit", '"data.args" must be a JSON object')
  const original = described.args ?? {}
  for (const [name, value] of Object.entries(edits)) {
    if (!described.editable.includes(name)) {
      if (value === original[name]) continue
      throw new HttpError(400, "invalid_edit", `the tool does not allow changing "${name}"`)
    }
    if (typeof value !== typeof original[name]) {
      throw new HttpError(400, "invalid_edit", `"${name}" must stay a ${typeof original[name]}`)
    }
  }
  return { ...answer, data: { ...answer.data, args: { ...original, ...edits } } }
}
