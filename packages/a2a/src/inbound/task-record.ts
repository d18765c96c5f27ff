import { type Artifact, type Message, type Part, Role, type Task, type TaskState } from "@a2a-js/sdk"

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

/** @internal Whether a stored value is a task record this version reads. */
export function isTaskRecord(value: unknown): value is TaskRecord {
  return typeof value === "object" && value !== null && (value as { v?: unknown }).v === 1
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
