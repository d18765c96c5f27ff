import { describe, expectTypeOf, it } from "vitest"
import type {
  ContinueOptions,
  ContinueTranscriptOptions,
  ResumeContext,
  StoredResumeOptions,
} from "../src/client/client.js"
import type { Message, Request } from "../src/types.js"

// `ContinueOptions` was split into a stateless continue and a stored resume; the package's
// `typecheck` (tsc over test/) checks that every shape callers wrote before still fits.
describe("ContinueOptions, split", () => {
  it("both halves are continueRun options, and the old shapes still type-check", () => {
    expectTypeOf<ContinueTranscriptOptions>().toExtend<ContinueOptions>()
    expectTypeOf<StoredResumeOptions>().toExtend<ContinueOptions>()
    const messages: Message[] = []
    const pending = { id: "r", kind: "approval", prompt: "?" } as Request
    const old: ContinueOptions[] = [
      { messages, pending, answer: { id: "r", ok: true } },
      { id: "c", answer: { id: "r", ok: true }, claim: "tok", checkpoint: true, expiryChecked: true },
      { id: "c", resume: { claim: "tok", signal: new AbortController().signal, checkpoint: true } },
    ]
    expectTypeOf(old).toExtend<ContinueOptions[]>()
    expectTypeOf<ResumeContext>().toEqualTypeOf<{
      claim?: string
      signal?: AbortSignal
      checkpoint?: boolean
    }>()
    // @ts-expect-error a stored resume names its conversation
    const noId: StoredResumeOptions = { answer: { id: "r", ok: true } }
    // @ts-expect-error a stateless continue has its transcript
    const noMessages: ContinueTranscriptOptions = { pending }
    void noId
    void noMessages
  })
})
