import {
  type Answer,
  AnswerInvalidError,
  type ApprovalGrant,
  type GrantFilter,
  type GrantQuery,
  type GrantScope,
  type PendingEntry,
  runIdOfEntry,
} from "@toolnexus/core"
import type { DurableStore } from "../durable-store.js"
import { RECORD_FORMAT, checkedRecord } from "./record-format.js"
import { readRunRecord } from "./run-record.js"

// Grants live in snapshots (no schema change): the grant itself, a pointer per scope and tool
// (what a call's lookup reads: one read), and an append-only log of ids (what a listing reads).
// Log slots are taken with `createSnapshot`, so processes sharing the store never overwrite
// each other's entries.
const GRANT = "tnx-grant/"
const POINTER = "tnx-grant-for/"
const LOG = "tnx-grant-log/"

/**
 * A grant record as stored (format v1; one written before `v` was kept reads as v1), its
 * version dropped.
 */
function readRecord<T extends object>(key: string, value: unknown): T | undefined {
  const record = checkedRecord<T & { v?: unknown }>(`the grant record ${key}`, value)
  if (record === undefined) return undefined
  const { v: _, ...rest } = record
  return rest as T
}

const read = async <T extends object>(store: DurableStore, key: string): Promise<T | undefined> =>
  readRecord<T>(key, await store.getSnapshot(key))

/** Where the next log slot probably is, per store (a hint: a taken slot is skipped). */
const nextSlot = new WeakMap<DurableStore, number>()

const pointerKey = (scope: GrantScope, holder: string, tool: string) =>
  `${POINTER}${scope}/${encodeURIComponent(holder)}/${encodeURIComponent(tool)}`

/**
 * @internal The principal the run holding conversation `conversationId` was started for, if
 * any. The run is the conversation itself (a client agent's run, whose id may contain `/`:
 * `ada/chat-1`), else for a runtime handle (`<runId>/root/…`) the longest `/`-prefix a host
 * recorded as a run.
 */
export async function principalOf(store: DurableStore, conversationId: string): Promise<string | undefined> {
  for (let end = conversationId.length; end > 0; end = conversationId.lastIndexOf("/", end - 1)) {
    const record = await readRunRecord(store, conversationId.slice(0, end))
    if (record) return record.principal
  }
  return undefined
}

/**
 * @internal The grant an approval answer asks to record (`data.remember`), or undefined.
 * Checked before anything is delivered.
 *
 * @throws AnswerInvalidError for a `remember` that is not `"conversation"` / `"principal"`, or
 *   `"principal"` for a run started without one.
 */
export async function grantOf(
  store: DurableStore,
  entry: PendingEntry,
  answer: Answer,
): Promise<ApprovalGrant | undefined> {
  const remember = answer.data?.remember
  const { request } = entry
  const tool = request.data?.tool
  // Only the approval gate's requests (`argsHash`) are asked again where a grant could answer.
  const gated = request.kind === "approval" && typeof request.data?.argsHash === "string"
  if (remember === undefined || !gated || typeof tool !== "string") return undefined
  if (remember !== "conversation" && remember !== "principal") {
    throw new AnswerInvalidError(
      `answer.data.remember must be "conversation" or "principal", got ${JSON.stringify(remember)}`,
    )
  }
  const grant: ApprovalGrant = {
    id: `grant-${request.id}`,
    tool,
    scope: remember,
    grantedBy: request.id,
    createdAt: new Date().toISOString(),
  }
  if (remember === "conversation") grant.conversationId = entry.conversationId
  else {
    const principal = await principalOf(store, runIdOfEntry(entry))
    if (principal === undefined) {
      throw new AnswerInvalidError(
        `answer.data.remember "principal": the run waiting on request ${request.id} was started without a principal`,
      )
    }
    grant.principal = principal
  }
  return answer.ok ? grant : undefined
}

/**
 * @internal Records `grant` (idempotent: a redelivery of the same answer records it again in
 * place). A newer grant for the same scope and tool replaces the older one.
 */
export async function recordGrant(store: DurableStore, grant: ApprovalGrant): Promise<void> {
  let slot = nextSlot.get(store) ?? (await firstFreeSlot(store))
  while (!(await store.createSnapshot(`${LOG}${slot}`, { v: RECORD_FORMAT, id: grant.id }))) slot++
  nextSlot.set(store, slot + 1)
  const existing = await read<ApprovalGrant>(store, GRANT + grant.id)
  if (!existing) await store.putSnapshot(GRANT + grant.id, { v: RECORD_FORMAT, ...grant })
  const key = pointerKey(grant.scope, holderOf(grant), grant.tool)
  const before = await read<{ id: string }>(store, key)
  await store.putSnapshot(key, { v: RECORD_FORMAT, id: grant.id })
  if (before && before.id !== grant.id) await store.deleteSnapshot(GRANT + before.id)
}

/** The first log slot not taken, found in O(log n) reads: doubling, then halving. */
async function firstFreeSlot(store: DurableStore): Promise<number> {
  const taken = async (slot: number) => (await store.getSnapshot(`${LOG}${slot}`)) !== undefined
  if (!(await taken(0))) return 0
  let high = 1
  while (await taken(high)) high *= 2
  let low = high / 2 // taken; `high` is free
  while (high - low > 1) {
    const mid = Math.floor((low + high) / 2)
    if (await taken(mid)) low = mid
    else high = mid
  }
  return high
}

/** @internal Removes grant `id`: false when none is in force. */
export async function revokeGrant(store: DurableStore, id: string): Promise<boolean> {
  if (typeof id !== "string" || id === "") return false
  const grant = await read<ApprovalGrant>(store, GRANT + id)
  if (!grant) return false
  const key = pointerKey(grant.scope, holderOf(grant), grant.tool)
  if ((await read<{ id: string }>(store, key))?.id === id) await store.deleteSnapshot(key)
  await store.deleteSnapshot(GRANT + id)
  return true
}

/** @internal The grants in force, oldest first, matching every field of `filter`. */
export async function listGrants(store: DurableStore, filter: GrantFilter = {}): Promise<ApprovalGrant[]> {
  const ids = new Set<string>()
  for (let slot = 0; ; slot++) {
    const entry = await read<{ id: string }>(store, `${LOG}${slot}`)
    if (!entry) break
    ids.add(entry.id)
  }
  const grants: ApprovalGrant[] = []
  for (const id of ids) {
    const grant = await read<ApprovalGrant>(store, GRANT + id)
    if (grant && matches(grant, filter)) grants.push(grant)
  }
  return grants
}

/**
 * @internal The grant covering a call of `query.tool` in `query.conversationId`: the
 * conversation's own, then its run's principal's. A grant whose answer lost to a decline (a
 * concurrent delivery decided first) covers nothing.
 */
export async function findGrant(store: DurableStore, query: GrantQuery): Promise<ApprovalGrant | undefined> {
  const holders: [GrantScope, string | undefined][] = [["conversation", query.conversationId]]
  holders.push(["principal", await principalOf(store, query.conversationId)])
  for (const [scope, holder] of holders) {
    if (holder === undefined) continue
    const pointer = await read<{ id: string }>(store, pointerKey(scope, holder, query.tool))
    if (!pointer) continue
    const grant = await read<ApprovalGrant>(store, GRANT + pointer.id)
    if (!grant) continue
    if ((await store.getDecision(grant.grantedBy))?.ok === false) continue
    return grant
  }
  return undefined
}

function holderOf(grant: ApprovalGrant): string {
  return (grant.scope === "conversation" ? grant.conversationId : grant.principal) as string
}

function matches(grant: ApprovalGrant, filter: GrantFilter): boolean {
  if (filter.tool !== undefined && grant.tool !== filter.tool) return false
  if (filter.scope !== undefined && grant.scope !== filter.scope) return false
  if (filter.conversationId !== undefined && grant.conversationId !== filter.conversationId) return false
  if (filter.principal !== undefined && grant.principal !== filter.principal) return false
  return true
}
