import type {
  Event as CoreEvent,
  Interrupt as CoreInterrupt,
  RunAgentInput,
  RunFinishedOutcome,
} from "@ag-ui/core"
import { describe, expectTypeOf, it } from "vitest"
import type { AgUiEvent, AgUiInterrupt, AgUiOutcome } from "./ag-ui-event.js"
import type { AgUiInput } from "./run-agent-input.js"

// Pins the hand-copied AG-UI types against `@ag-ui/core` (a devDependency). `@ag-ui/core`
// types an event's `type` as a member of its string enum `EventType`; on the wire (and in the
// copy) it is the enum's string, so the real events are compared with `type` as that string.

/** An `@ag-ui/core` event as JSON carries it: `type` as the enum member's string value. */
type Wire<E> = E extends { type: infer T extends string } ? Omit<E, "type"> & { type: `${T}` } : never
type Copy<T extends AgUiEvent["type"]> = Extract<AgUiEvent, { type: T }>
type Core<T extends string> = Extract<Wire<CoreEvent>, { type: T }>

describe("the AG-UI events are @ag-ui/core's", () => {
  it("every event the copy describes is a valid @ag-ui/core event (subset, one way)", () => {
    // One way: the copy lists only the events the handler writes, with fields narrowed to
    // what it writes (role "assistant", usage with every count), so a real event need not be
    // one of the copy's.
    expectTypeOf<AgUiEvent>().toExtend<Wire<CoreEvent>>()
  })

  it("each copied event is the @ag-ui/core event of the same type (subset, one way)", () => {
    expectTypeOf<Copy<"RUN_STARTED">>().toExtend<Core<"RUN_STARTED">>()
    expectTypeOf<Copy<"TEXT_MESSAGE_START">>().toExtend<Core<"TEXT_MESSAGE_START">>()
    expectTypeOf<Copy<"TEXT_MESSAGE_CONTENT">>().toExtend<Core<"TEXT_MESSAGE_CONTENT">>()
    expectTypeOf<Copy<"TEXT_MESSAGE_END">>().toExtend<Core<"TEXT_MESSAGE_END">>()
    expectTypeOf<Copy<"REASONING_START">>().toExtend<Core<"REASONING_START">>()
    expectTypeOf<Copy<"REASONING_MESSAGE_START">>().toExtend<Core<"REASONING_MESSAGE_START">>()
    expectTypeOf<Copy<"REASONING_MESSAGE_CONTENT">>().toExtend<Core<"REASONING_MESSAGE_CONTENT">>()
    expectTypeOf<Copy<"REASONING_MESSAGE_END">>().toExtend<Core<"REASONING_MESSAGE_END">>()
    expectTypeOf<Copy<"REASONING_END">>().toExtend<Core<"REASONING_END">>()
    expectTypeOf<Copy<"TOOL_CALL_START">>().toExtend<Core<"TOOL_CALL_START">>()
    expectTypeOf<Copy<"TOOL_CALL_ARGS">>().toExtend<Core<"TOOL_CALL_ARGS">>()
    expectTypeOf<Copy<"TOOL_CALL_END">>().toExtend<Core<"TOOL_CALL_END">>()
    expectTypeOf<Copy<"TOOL_CALL_RESULT">>().toExtend<Core<"TOOL_CALL_RESULT">>()
    expectTypeOf<Copy<"RUN_FINISHED">>().toExtend<Core<"RUN_FINISHED">>()
    expectTypeOf<Copy<"RUN_ERROR">>().toExtend<Core<"RUN_ERROR">>()
  })

  it("the outcome and its interrupt are @ag-ui/core's (subset, one way)", () => {
    // One way: the handler never reports a cancelled outcome, and its interrupts' metadata
    // always holds `toolnexus`.
    expectTypeOf<AgUiOutcome>().toExtend<RunFinishedOutcome>()
    expectTypeOf<AgUiInterrupt>().toExtend<CoreInterrupt>()
  })

  it("every RunAgentInput is readable as the input the handler reads (superset, one way)", () => {
    // The other way round: AgUiInput lists the parts of a RunAgentInput the handler reads,
    // typed loosely where it checks them itself, so any real input must fit it.
    expectTypeOf<RunAgentInput>().toExtend<AgUiInput>()
  })
})
