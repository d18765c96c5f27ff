import type { DurableStore } from "../durable-store.js"
import { checkedRecord } from "./record-format.js"

/**
 * What a store host keeps per run id (snapshot `host-run/<runId>`, format version 1): which
 * agent runs it and where it stands, so another host over the same store routes its answers
 * and a second `start` starts nothing.
 */
export interface RunRecord {
  /** The format version. */
  v: 1
  /** The hosted agent's name. */
  agent: string
  /** `running` until its first end or park; `pending` while it waits on a request. */
  state: "running" | "pending" | "done" | "failed" | "cancelled"
  /** A runtime agent's root handle id (its conversation is `<runId>/<handle>`). */
  handle?: string
  /** The last result (a pending one while parked). */
  result?: unknown
  /** Whom the run acts for (`start`'s `principal`): the holder of `remember: "principal"` grants. */
  principal?: string
  /** Why it failed or was cancelled. */
  error?: { message: string; code?: string | undefined }
}

const PREFIX = "host-run/"

/**
 * @internal The run's record, or undefined when no host started it.
 *
 * @throws SchemaVersionError for a record of another format version (a newer host wrote it):
 *   refused, never taken for "no record" (which would start or adopt the run again).
 */
export async function readRunRecord(store: DurableStore, runId: string): Promise<RunRecord | undefined> {
  return checkedRecord<RunRecord>(
    `the host run record ${PREFIX + runId}`,
    await store.getSnapshot(PREFIX + runId),
  )
}

/**
 * @internal Records a new run: false when run id `runId` has a record (in any process). The
 * store serialises the record itself (undefined fields dropped): no JSON copy is made here, only
 * a shallow one, since the host sets fields on its own record later.
 */
export async function createRunRecord(
  store: DurableStore,
  runId: string,
  record: RunRecord,
): Promise<boolean> {
  return store.createSnapshot(PREFIX + runId, { ...record })
}

/** @internal Saves the run's record whole (a record each caller builds fresh; the store serialises it). */
export async function writeRunRecord(store: DurableStore, runId: string, record: RunRecord): Promise<void> {
  await store.putSnapshot(PREFIX + runId, record)
}
