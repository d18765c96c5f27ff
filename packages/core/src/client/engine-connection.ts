import { ToolnexusError } from "../errors.js"
import type { RunHost } from "../host/run-host.js"
import type { RunResult } from "./run-result.js"

/** §15's name of {@link RunHost}, kept as an alias (`connectRestate`, `connectDbos` return it). */
export type EngineConnection<Result = RunResult> = RunHost<Result>

/**
 * A run on a durable-execution engine that failed (past core's retries, an agent no worker
 * defines, a turn over `maxStepBytes`) or that the engine does not know (never started, past
 * retention): what `EngineConnection.result` rejects with.
 */
export class EngineRunError extends ToolnexusError {
  /**
   * Always `"EngineRunError"`: lets a caller test `err.name === "EngineRunError"` (`code` is
   * `"TNX_ENGINE_RUN"`).
   */
  override readonly name = "EngineRunError"
  static override readonly family = "TNX_ENGINE_RUN"
  /** The run (workflow) id. */
  readonly runId: string
  constructor(runId: string, detail: string, options?: { cause?: unknown }) {
    super("TNX_ENGINE_RUN", `run ${JSON.stringify(runId)} ${detail}`, options)
    this.runId = runId
  }
}
