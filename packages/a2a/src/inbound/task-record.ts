import { type Artifact, type Message, type Part, Role, type Task, type TaskState } from "@a2a-js/sdk"
import { SchemaVersionError } from "@toolnexus/core"

/**
 * @internal The task record format version this code writes, and the versions it reads. A
 * change to the record's shape adds a version (and a golden fixture under
 * `test/fixtures/task-record/`); it never edits one.
 */
export const TASK_RECORD_VERSION = 1
const READABLE_VERSIONS = [1] as const

/**
 * @internal A served task as it is kept in the store (snapshot `a2a/task/<id>`), in the SDK's
 * own object form (plain JSON: no file parts are ever accepted). Versioned: a reader refuses
 * a record of another version.
 */
export interface TaskRecord {
  v: 1
  id: string
  contextId: string
  state: TaskState
  statusMessage: Message | undefined
  timestamp: string
  history: Message[]
  artifacts: Artifact[]
  /** The open request while the task is input-required or auth-required. */
  requestId?: string
  /** Runtime mode: the id of the task's agent handle, whose text is the task's `result`. */
  handle?: string
  /** A hash of the bearer token the task belongs to. */
  owner?: string
  /** Message ids already taken (the first message, every answer): a repeat is a no-op. */
  seen: string[]
}

/** @internal The store key of a task record. */
export const taskKey = (id: string) => `a2a/task/${id}`
/** @internal The conversation (or runtime namespace) id of a task. */
export const conversationOf = (id: string) => `a2a/${id}`

/**
 * @internal The task record stored under `taskKey(id)`, or `undefined` when there is none.
 * @throws SchemaVersionError when the stored value is not a record of a version this code
 *   reads (a newer release wrote it, or it is not a task record at all).
 */
export function readTaskRecord(value: unknown, id: string): TaskRecord | undefined {
  if (value === undefined) return undefined
  const v = typeof value === "object" && value !== null ? (value as { v?: unknown }).v : undefined
  if (!(READABLE_VERSIONS as readonly unknown[]).includes(v))
    throw new SchemaVersionError(`the A2A task record ${JSON.stringify(taskKey(id))}`, v, READABLE_VERSIONS)
  return value as TaskRecord
}

/** @internal An agent message on the task. */
export function agentMessage(record: TaskRecord, parts: Part[], messageId: string): Message {
  return {
    messageId,
    contextId: record.contextId,
    taskId: record.id,
    role: Role.ROLE_AGENT,
    parts,
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  }
}

/** @internal The wire task of a record. */
export function taskOf(record: TaskRecord, historyLength?: number): Task {
  const history =
    historyLength === undefined
      ? record.history
      : historyLength <= 0
        ? []
        : record.history.slice(-historyLength)
  return {
    id: record.id,
    contextId: record.contextId,
    status: { state: record.state, message: record.statusMessage, timestamp: record.timestamp },
    artifacts: record.artifacts,
    history,
    metadata: undefined,
  }
}
