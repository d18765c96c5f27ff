import type { CommittedSnapshot, HostRelayOptions, HostRelayTool, JSONSchema } from "@toolnexus/core"
import type { DurableStore } from "../durable-store.js"
import { checkedRecord } from "./record-format.js"

/** The run record's format versions this host reads: v2 is v1 plus `relay`. */
const RUN_RECORD_FORMATS = [1, 2] as const

/**
 * What a resume of a relay run needs of its caller's last `relay` (kept on the run's record,
 * so any process resumes it as the caller's own would): the tools' declarations, the output
 * schema and a `stream: false`. History and the deadline are one call's and are not kept.
 */
export interface RunRelay {
  /** The caller's tools (name, description, parameters), offered again as relay tools. */
  tools?: HostRelayTool[]
  /** The JSON Schema the run's final answer must match. */
  output?: JSONSchema
  /** `false` when the caller asked for non-streaming model requests. */
  stream?: false
}

/**
 * What a store host keeps per run id (snapshot `host-run/<runId>`): which agent runs it and
 * where it stands, so another host over the same store routes its answers and a second `start`
 * starts nothing. Format v1; v2 when it carries `relay` (so a host that cannot resume a relay
 * run with its caller's tools refuses the record rather than misreads it).
 */
export interface RunRecord {
  /** The format version: 2 with `relay`, else 1 (the writers set it). */
  v: 1 | 2
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
  /** The relay of the last call that carried one (`start`, `send`, `deliverAnswer`); v2 only. */
  relay?: RunRelay
}

/**
 * @internal What the record keeps of a call's `relay`: the tools' declarations (nothing else
 * of each tool), `output` and `stream: false`; undefined when none of these is given.
 */
export function runRelayOf(relay: HostRelayOptions | undefined): RunRelay | undefined {
  if (relay === undefined) return undefined
  const kept: RunRelay = {}
  if (relay.tools !== undefined && relay.tools.length > 0)
    kept.tools = relay.tools.map((t) => ({
      name: t.name,
      ...(t.description !== undefined ? { description: t.description } : {}),
      ...(t.parameters !== undefined ? { parameters: t.parameters } : {}),
    }))
  if (relay.output !== undefined) kept.output = relay.output
  if (relay.stream === false) kept.stream = false
  return Object.keys(kept).length > 0 ? kept : undefined
}

/** @internal `record` with `relay` set (or removed, for undefined), at the version that fits. */
export function withRelay(record: RunRecord, relay: RunRelay | undefined): RunRecord {
  // A turn without relay on a run without one (every chat turn): the record as it is, no copy.
  if (relay === undefined && record.relay === undefined) return record
  const { relay: _old, ...rest } = record
  return relay === undefined ? rest : { ...rest, relay }
}

/** `record` as written: v2 with a relay, v1 without (a record without one reads as before). */
function versioned(record: RunRecord): RunRecord {
  const v = record.relay === undefined ? 1 : 2
  return record.v === v ? record : { ...record, v }
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
    RUN_RECORD_FORMATS,
  )
}

/**
 * @internal Records a new run: false when run id `runId` has a record (in any process). The
 * store serialises the record itself (undefined fields dropped): no JSON copy is made here, only
 * a shallow one, since the host sets fields on its own record later.
 */
export function createRunRecord(store: DurableStore, runId: string, record: RunRecord): Promise<boolean> {
  const v = record.relay === undefined ? 1 : 2
  return store.createSnapshot(PREFIX + runId, record.v === v ? { ...record } : { ...record, v })
}

/** @internal Saves the run's record whole (a record each caller builds fresh; the store serialises it). */
export function writeRunRecord(store: DurableStore, runId: string, record: RunRecord): Promise<void> {
  return store.putSnapshot(PREFIX + runId, versioned(record))
}

/**
 * @internal The run's record as a snapshot a conversation's final save writes in the same
 * store call (`commitSnapshot`): stored as {@link writeRunRecord} stores it.
 */
export function runRecordSnapshot(runId: string, record: RunRecord): CommittedSnapshot {
  return { key: PREFIX + runId, value: versioned(record) }
}
