import { describe, expect, it } from "vitest"
import { AnswerInvalidError } from "../errors.js"
import { assertAnswer } from "./answer-shape.js"

/** `{ v: { v: … } }` nested `depth` levels, counting the outermost object. */
function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = { leaf: true }
  for (let level = 1; level < depth; level++) value = { v: value }
  return value
}

describe("assertAnswer", () => {
  it("takes the wire shape", () => {
    expect(() =>
      assertAnswer({ id: "r1", ok: false, reason: "no", data: { a: [1, { b: 2 }] } }),
    ).not.toThrow()
  })

  it.each([
    [null, /must be an object/],
    [{ id: "", ok: true }, /answer.id/],
    [{ id: "r1", ok: "yes" }, /answer.ok/],
    [{ id: "r1", ok: true, data: [1] }, /answer.data must be a plain object/],
    [{ id: "r1", ok: true, reason: 3 }, /answer.reason/],
  ])("refuses %j", (value, message) => {
    expect(() => assertAnswer(value)).toThrow(AnswerInvalidError)
    expect(() => assertAnswer(value)).toThrow(message)
  })

  // Issue 33: an answer no store can write (JSON.stringify overflows its stack at a few
  // thousand levels) was refused only after its claim was taken; now before anything.
  it("refuses data nested deeper than 1,000 levels, and takes 1,000", () => {
    expect(() => assertAnswer({ id: "r1", ok: true, data: nested(1_000) })).not.toThrow()
    expect(() => assertAnswer({ id: "r1", ok: true, data: nested(1_001) })).toThrow(/at most 1000 levels/)
    let deep: unknown = 1
    for (let level = 0; level < 20_000; level++) deep = [deep]
    expect(() => assertAnswer({ id: "r1", ok: true, data: { deep } })).toThrow(AnswerInvalidError)
  })
})
