import type { UIMessage as AiUIMessage } from "ai"
import { describe, expectTypeOf, it } from "vitest"
import type { UIMessage } from "./ui-message.js"

// Pins the hand-copied UIMessage: every message `loadChat` returns is one `useChat` takes.
describe("UIMessage is ai's", () => {
  it("a loaded message is an ai UIMessage", () => {
    expectTypeOf<UIMessage>().toExtend<AiUIMessage>()
  })
})
