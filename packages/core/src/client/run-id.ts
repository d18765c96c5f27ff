import type { Request } from "../types.js"
import { drawEntropy, entropyPool } from "../internal/entropy.js"

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
  // A v4 UUID written here from pooled random bytes and read back as one flat string: Node's
  // randomUUID() is a chain of ~30 concatenated pieces (a parked run kept the whole chain,
  // ~700 B, in `data.runId`), and copying it flat cost two more calls into C++ per run.
  const at = drawEntropy(16)
  for (let i = 0; i < 16; i++) {
    let byte = entropyPool[at + i] as number
    // The version (4) and the RFC 9562 variant (10xx) bits.
    if (i === 6) byte = (byte & 0x0f) | 0x40
    else if (i === 8) byte = (byte & 0x3f) | 0x80
    const pos = UUID_AT[i] as number
    scratch[pos] = HEX[byte >> 4] as number
    scratch[pos + 1] = HEX[byte & 15] as number
  }
  return scratch.toString("latin1")
}

const scratch = Buffer.from("run-00000000-0000-0000-0000-000000000000", "latin1")
/** Where each byte's two hex digits go in `scratch` (after `run-`, around the dashes). */
const UUID_AT = [4, 6, 8, 10, 13, 15, 18, 20, 23, 25, 28, 30, 32, 34, 36, 38]
const HEX = Buffer.from("0123456789abcdef", "latin1")

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
  const data = request.data
  if (data?.runId === runId) return request
  // A parked run keeps this object: copies made by spread keep their added key out of line
  // (~220 B more per parked run on Node 20). The commonest request, a stamped tool suspension
  // (`stampRequest`), is rebuilt as literals with the same keys in the same order.
  if (data !== undefined && hasKeys(request, REQUEST_KEYS) && hasKeys(data, STAMP_KEYS)) {
    return {
      id: request.id,
      kind: request.kind,
      prompt: request.prompt,
      data: { callId: data.callId, tool: data.tool, args: data.args, runId },
    }
  }
  return { ...request, data: { ...data, runId } }
}

const REQUEST_KEYS = ["id", "kind", "prompt", "data"]
const STAMP_KEYS = ["callId", "tool", "args"]

/** True when `value`'s own enumerable keys are exactly `keys`, in that order. */
function hasKeys(value: object, keys: readonly string[]): boolean {
  let i = 0
  for (const key in value) {
    if (!Object.hasOwn(value, key) || key !== keys[i]) return false
    i++
  }
  return i === keys.length
}
