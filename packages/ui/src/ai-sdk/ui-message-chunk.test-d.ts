import type { FinishReason, UIMessageChunk as AiUIMessageChunk } from "ai"
import { describe, expectTypeOf, it } from "vitest"
import type { UIFinishReason, UIMessageChunk } from "./ui-message-chunk.js"

// Pins the hand-copied UIMessageChunk against `ai`'s own (a devDependency). The copy is a
// SUBSET of the union: it lists only the members the handler writes, so the union is checked
// one way. Each member it lists but `finish` claims EQUALITY with `ai`'s member of the same `type`, checked
// both ways: `ai`'s extra optional fields (providerMetadata, dynamic, …) are allowed, a
// renamed, retyped or newly required field is not.

type Copy<T extends UIMessageChunk["type"]> = Extract<UIMessageChunk, { type: T }>
type Ai<T extends AiUIMessageChunk["type"]> = Extract<AiUIMessageChunk, { type: T }>

describe("UIMessageChunk is ai's", () => {
  it("every chunk the copy describes is a chunk ai accepts (subset)", () => {
    expectTypeOf<UIMessageChunk>().toExtend<AiUIMessageChunk>()
  })

  it("each copied member equals ai's member of the same type (both ways)", () => {
    expectTypeOf<Copy<"start">>().toExtend<Ai<"start">>()
    expectTypeOf<Ai<"start">>().toExtend<Copy<"start">>()
    expectTypeOf<Copy<"start-step">>().toExtend<Ai<"start-step">>()
    expectTypeOf<Ai<"start-step">>().toExtend<Copy<"start-step">>()
    expectTypeOf<Copy<"finish-step">>().toExtend<Ai<"finish-step">>()
    expectTypeOf<Ai<"finish-step">>().toExtend<Copy<"finish-step">>()
    expectTypeOf<Copy<"text-start">>().toExtend<Ai<"text-start">>()
    expectTypeOf<Ai<"text-start">>().toExtend<Copy<"text-start">>()
    expectTypeOf<Copy<"text-delta">>().toExtend<Ai<"text-delta">>()
    expectTypeOf<Ai<"text-delta">>().toExtend<Copy<"text-delta">>()
    expectTypeOf<Copy<"text-end">>().toExtend<Ai<"text-end">>()
    expectTypeOf<Ai<"text-end">>().toExtend<Copy<"text-end">>()
    expectTypeOf<Copy<"reasoning-start">>().toExtend<Ai<"reasoning-start">>()
    expectTypeOf<Ai<"reasoning-start">>().toExtend<Copy<"reasoning-start">>()
    expectTypeOf<Copy<"reasoning-delta">>().toExtend<Ai<"reasoning-delta">>()
    expectTypeOf<Ai<"reasoning-delta">>().toExtend<Copy<"reasoning-delta">>()
    expectTypeOf<Copy<"reasoning-end">>().toExtend<Ai<"reasoning-end">>()
    expectTypeOf<Ai<"reasoning-end">>().toExtend<Copy<"reasoning-end">>()
    expectTypeOf<Copy<"tool-input-available">>().toExtend<Ai<"tool-input-available">>()
    expectTypeOf<Ai<"tool-input-available">>().toExtend<Copy<"tool-input-available">>()
    expectTypeOf<Copy<"tool-output-available">>().toExtend<Ai<"tool-output-available">>()
    expectTypeOf<Ai<"tool-output-available">>().toExtend<Copy<"tool-output-available">>()
    expectTypeOf<Copy<"tool-output-error">>().toExtend<Ai<"tool-output-error">>()
    expectTypeOf<Ai<"tool-output-error">>().toExtend<Copy<"tool-output-error">>()
    expectTypeOf<Copy<"tool-output-denied">>().toExtend<Ai<"tool-output-denied">>()
    expectTypeOf<Ai<"tool-output-denied">>().toExtend<Copy<"tool-output-denied">>()
    expectTypeOf<Copy<"tool-approval-request">>().toExtend<Ai<"tool-approval-request">>()
    expectTypeOf<Ai<"tool-approval-request">>().toExtend<Copy<"tool-approval-request">>()
    expectTypeOf<Copy<"error">>().toExtend<Ai<"error">>()
    expectTypeOf<Ai<"error">>().toExtend<Copy<"error">>()
  })

  it("finish is ai's finish with the reasons the handler reports (subset, one way)", () => {
    // ai's FinishReason also has "interrupted", which the handler never reports.
    expectTypeOf<Copy<"finish">>().toExtend<Ai<"finish">>()
    expectTypeOf<Omit<Ai<"finish">, "finishReason">>().toExtend<Omit<Copy<"finish">, "finishReason">>()
    expectTypeOf<UIFinishReason>().toExtend<FinishReason>()
  })

  it("a data part equals ai's data part (both ways)", () => {
    expectTypeOf<Copy<`data-${string}`>>().toExtend<Ai<`data-${string}`>>()
    expectTypeOf<Ai<`data-${string}`>>().toExtend<Copy<`data-${string}`>>()
  })
})
