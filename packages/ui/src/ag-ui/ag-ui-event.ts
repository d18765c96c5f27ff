/**
 * The AG-UI 1.0 events the handler writes (`@ag-ui/core`'s `EventType` members, as string
 * literals): a structural copy, so that no published declaration needs `@ag-ui/*` installed.
 */
export type AgUiEvent =
  | {
      /** `"RUN_STARTED"`: the first event of every run. */
      type: "RUN_STARTED"
      /** The posted `RunAgentInput`'s `threadId` (the chat id). */
      threadId: string
      /** The posted `RunAgentInput`'s `runId`. */
      runId: string
    }
  | {
      /** `"TEXT_MESSAGE_START"`: opens an assistant text message (the model's text or refusal). */
      type: "TEXT_MESSAGE_START"
      /** A new id for the message (`msg-…`), repeated by its content and end events. */
      messageId: string
      /** Always `"assistant"`. */
      role: "assistant"
    }
  | {
      /** `"TEXT_MESSAGE_CONTENT"`: more text for the open text message. */
      type: "TEXT_MESSAGE_CONTENT"
      /** The id of the text message the delta belongs to. */
      messageId: string
      /** The text to append (never empty). */
      delta: string
    }
  | {
      /** `"TEXT_MESSAGE_END"`: closes a text message. */
      type: "TEXT_MESSAGE_END"
      /** The id of the text message it closes. */
      messageId: string
    }
  | {
      /** `"REASONING_START"`: opens a reasoning block, followed by its one reasoning message. */
      type: "REASONING_START"
      /** A new id for the reasoning (`reasoning-…`), shared by its message and end events. */
      messageId: string
    }
  | {
      /** `"REASONING_MESSAGE_START"`: opens the reasoning block's message. */
      type: "REASONING_MESSAGE_START"
      /** The id of the reasoning block (the same as its `REASONING_START`'s). */
      messageId: string
      /** Always `"reasoning"`. */
      role: "reasoning"
    }
  | {
      /** `"REASONING_MESSAGE_CONTENT"`: more reasoning text for the open reasoning message. */
      type: "REASONING_MESSAGE_CONTENT"
      /** The id of the reasoning message the delta belongs to. */
      messageId: string
      /** The reasoning text to append (never empty). */
      delta: string
    }
  | {
      /** `"REASONING_MESSAGE_END"`: closes the reasoning message; `REASONING_END` follows. */
      type: "REASONING_MESSAGE_END"
      /** The id of the reasoning message it closes. */
      messageId: string
    }
  | {
      /** `"REASONING_END"`: closes the reasoning block. */
      type: "REASONING_END"
      /** The id of the reasoning block it closes. */
      messageId: string
    }
  | {
      /** `"TOOL_CALL_START"`: a tool call the model made; its arguments and end follow at once. */
      type: "TOOL_CALL_START"
      /** The tool call's id, as the model gave it. */
      toolCallId: string
      /** The name of the called tool. */
      toolCallName: string
      /** The id of the text message the model streamed in the same turn; absent when it streamed none. */
      parentMessageId?: string
    }
  | {
      /** `"TOOL_CALL_ARGS"`: the call's arguments, in one event. */
      type: "TOOL_CALL_ARGS"
      /** The id of the call the arguments belong to. */
      toolCallId: string
      /** The call's complete arguments, as JSON text. */
      delta: string
    }
  | {
      /** `"TOOL_CALL_END"`: closes the call's start and arguments. */
      type: "TOOL_CALL_END"
      /** The id of the call it closes. */
      toolCallId: string
    }
  | {
      /** `"TOOL_CALL_RESULT"`: a call's result (left out for results the client posted itself). */
      type: "TOOL_CALL_RESULT"
      /** A new id for the tool message (`tool-…`). */
      messageId: string
      /** The id of the call the result belongs to. */
      toolCallId: string
      /** The tool's output text, as the model sees it (an error's text too). */
      content: string
      /** Always `"tool"`. */
      role: "tool"
    }
  | {
      /** `"RUN_FINISHED"`: the run ended without failing (done, halted on a request, or cut short). */
      type: "RUN_FINISHED"
      /** The posted `RunAgentInput`'s `threadId` (the chat id). */
      threadId: string
      /** The posted `RunAgentInput`'s `runId`. */
      runId: string
      /** The run's outcome as toolnexus reports it (the handler always sets it). */
      result?: {
        /**
         * The run's `status`: `done`, `pending` or `incomplete` (a saved runtime's handle may
         * report its own, e.g. `error`); `done` when the run reported none.
         */
        status: string
        /** Why the last model turn ended (`RunResult.finishReason`); absent when no model turn ran. */
        finishReason?: string
        /** What stopped an `incomplete` run (`maxTurns`, `maxOutputTokens`, …); absent otherwise. */
        limit?: string
      }
      /** `interrupt` for a request to answer, else `success` (with the relay calls to run, if any). */
      outcome?: AgUiOutcome
      /** The run's token usage, as one entry; absent when the result carries none. */
      usage?: {
        /** Prompt tokens of all the run's model requests. */
        inputTokens: number
        /** Completion tokens of all the run's model requests. */
        outputTokens: number
        /** The run's total tokens (its usage's `totalTokens`). */
        totalTokens: number
      }[]
    }
  | {
      /** `"RUN_ERROR"`: the run failed, or the input was refused; nothing follows. */
      type: "RUN_ERROR"
      /**
       * What the client is told: the handler's `onError` text (default `<code>: <message>`, keys redacted),
       * or the refusal's message.
       */
      message: string
      /** The toolnexus error code (`TNX_…`); `TNX_INTERNAL` for an error that has none. */
      code: string
    }

/** How a run ended: `success` (with the relay calls the client must run), or interrupts to resume. */
export type AgUiOutcome =
  | {
      /** `"success"`: nothing to resume, unless `pendingToolCallIds` lists frontend calls to run. */
      type: "success"
      /**
       * The ids of the relay (frontend tool) calls the run waits on: post their results as tool
       * messages. Absent when the run waits on nothing.
       */
      pendingToolCallIds?: string[]
    }
  | {
      /** `"interrupt"`: the run halted on a request; answer it with `resume[]`. */
      type: "interrupt"
      /** The request the run halted on, as one interrupt. */
      interrupts: AgUiInterrupt[]
    }

/** An AG-UI interrupt standing for a toolnexus request (`metadata.toolnexus` is the Request itself). */
export interface AgUiInterrupt {
  /** The toolnexus request's id; a `resume[]` entry answers it with this `interruptId`. */
  id: string
  /**
   * `tool_call` (approval of a call this thread shows, not escalated from a sub-agent's
   * handle: no `data.path`), `confirmation` (any other approval), `input_required` (an input
   * request), else `toolnexus:<kind>`.
   */
  reason: string
  /** The request's `prompt`: the text to show the user. */
  message?: string
  /** With `reason: "tool_call"`: the id of the call awaiting approval; absent otherwise. */
  toolCallId?: string
  /**
   * The JSON Schema of the `resume[]` payload: `{ approved: boolean, reason?: string }` for
   * `tool_call`, the input request's `data.schema` for `input_required`; absent otherwise.
   */
  responseSchema?: Record<string, unknown>
  /** The request's `expiresAt` (RFC 3339), after which an approval is refused; absent when it has none. */
  expiresAt?: string
  /** Toolnexus' own data for the interrupt. */
  metadata: {
    /** The toolnexus `Request` the interrupt stands for, as JSON. */
    toolnexus: unknown
  }
}
