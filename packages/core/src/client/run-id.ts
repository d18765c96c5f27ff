import { randomUUID } from "node:crypto"
import type { Request } from "../types.js"

/**
 * @internal The scope of a run halted before runs got their own ids (its request carries no
 * `data.runId`): its calls' idempotency keys were `run:<call id>`, so its resume keeps them.
 */
export const LEGACY_RUN_SCOPE = "run"

/**
 * @internal A fresh id for a run given none (`run-<uuid>`), so that two runs never share an
 * idempotency key even when the provider repeats its call ids (several always say `call_0`).
 */
export function newRunId(): string {
  return `run-${randomUUID()}`
}

/** @internal The generated run id a halted request carries (`data.runId`), if any. */
export function runIdOf(request: Request): string | undefined {
  const runId = request.data?.runId
  return typeof runId === "string" && runId !== "" ? runId : undefined
}

/**
 * @internal A copy of the request a run without an id halts on, carrying that run's generated
 * id as `data.runId`: the one thing a stateless resume (`continueRun` with `messages`) has to
 * go on, so the retried call gets the idempotency key it had. The run's own id wins over one
 * a tool copied from a request of an inner run.
 */
export function stampRunId(request: Request, runId: string): Request {
  if (request.data?.runId === runId) return request
  return { ...request, data: { ...request.data, runId } }
}
