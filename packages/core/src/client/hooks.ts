import type { ModelTurn } from "../providers/model-turn.js"
import type { Message, Tool, ToolResult } from "../types.js"

/**
 * Interception points of the loop. Every hook may be async. A suspension reaches
 * `afterTool` as an ordinary result whose `metadata.pending` holds the request.
 */
export interface Hooks {
  /** Before each LLM request: may replace the messages or tools sent for this request only. */
  beforeLLM?(info: {
    messages: readonly Message[]
    tools: Tool[]
    model: string
    turn: number
    /** The agents runtime's handle running the loop. */
    handle?: string
  }):
    | void
    | {
        /** Replaces the messages sent in this request only; the run's transcript is unchanged. */
        messages?: Message[]
        /** Replaces the tools declared in this request only; calls still run the toolkit's tools. */
        tools?: Tool[]
      }
    | Promise<void | {
        /** Replaces the messages sent in this request only; the run's transcript is unchanged. */
        messages?: Message[]
        /** Replaces the tools declared in this request only; calls still run the toolkit's tools. */
        tools?: Tool[]
      }>
  /** After each LLM reply, with the normalised response. */
  afterLLM?(info: { response: ModelTurn; model: string; turn: number; handle?: string }): void | Promise<void>
  /** Before a tool runs: return `{result}` to skip it, or `{args}` to change its arguments. */
  beforeTool?(info: {
    name: string
    args: Record<string, unknown>
    id: string
    turn: number
    /** The agents runtime's handle running the loop. */
    handle?: string
  }):
    | void
    | {
        /** Skips the tool and uses this result instead (it still goes to `afterTool`). */
        result?: ToolResult
        /** Runs the tool with these arguments instead; `afterTool` and the call's record get them too. */
        args?: Record<string, unknown>
      }
    | Promise<void | {
        /** Skips the tool and uses this result instead (it still goes to `afterTool`). */
        result?: ToolResult
        /** Runs the tool with these arguments instead; `afterTool` and the call's record get them too. */
        args?: Record<string, unknown>
      }>
  /** After a tool ran: return `{result}` to replace what the model sees. */
  afterTool?(info: {
    name: string
    args: Record<string, unknown>
    result: ToolResult
    id: string
    turn: number
    /** The agents runtime's handle running the loop. */
    handle?: string
  }):
    | void
    | {
        /** Replaces the tool's result: the model and the call's record get this one instead. */
        result?: ToolResult
      }
    | Promise<void | {
        /** Replaces the tool's result: the model and the call's record get this one instead. */
        result?: ToolResult
      }>
}
