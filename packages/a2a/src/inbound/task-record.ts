import { randomUUID } from "node:crypto"
import { type Artifact, type Message, type Part, Role, type Task, type TaskState } from "@a2a-js/sdk"
import { type Request, SchemaVersionError } from "@toolnexus/core"
import type { DurableStore } from "@toolnexus/durable"
import { textPart } from "../task-view.js"

/**
 * @internal The task record format version this code writes, and the versions it reads. A
 * change to the record's shape adds a version (and a golden fixture under
 * `test/fixtures/task-record/`); it never edits one.
 */
export const TASK_RECORD_VERSION = 2
const READABLE_VERSIONS = [1, 2] as const

/**
 * @internal A served task as it is kept in the store (snapshot `a2a/task/<id>`), in the SDK's
 * own object form (plain JSON: no file parts are ever accepted). Versioned: a reader refuses
 * a record of another version.
 */
export interface TaskRecord {
  /** 1: written by round 3 (its run is conversation `a2a/<id>`, started without a host); 2: `runId` set. */
  v: 1 | 2
  id: string
  /** The host run of the task (version 2); a version 1 record's is {@link legacyRunId}. */
  runId?: string
  contextId: string
  state: TaskState
  statusMessage: Message | undefined
  timestamp: string
  history: Message[]
  artifacts: Artifact[]
  /** The open request while the task is input-required or auth-required. */
  requestId?: string
  /** Version 1 in runtime mode: the task's agent handle; no longer read. */
  handle?: string
  /** A hash of the bearer token the task belongs to. */
  owner?: string
  /** Message ids already taken (the first message, every answer): a repeat is a no-op. */
  seen: string[]
}

/** @internal The store key of a task record. */
export const taskKey = (id: string) => `a2a/task/${id}`
/** @internal The host run id of a new task (a host's run ids have no `/`). */
export const runIdOf = (taskId: string) => `a2a.${taskId}`
/** @internal The run (conversation or runtime namespace) of a version 1 task, started by round 3. */
export const legacyRunId = (taskId: string) => `a2a/${taskId}`
/** @internal True for a version 1 task's run id (`a2a/<uuid>`): the shorthand host adopts it. */
export const isLegacyRunId = (runId: string) => /^a2a\/[0-9a-f-]{36}$/.test(runId)
/** @internal The host run of a task record of any version. */
export const runOf = (record: TaskRecord) => record.runId ?? legacyRunId(record.id)

/**
 * Where task records are kept: any durable store (`getSnapshot` / `putSnapshot` under
 * `a2a/task/<id>`), or this process's memory.
 */
export type TaskStore = Pick<DurableStore, "getSnapshot" | "putSnapshot">

/** @internal Task records in this process's memory (kept as JSON, as a store would). */
export function memoryTaskStore(): TaskStore {
  const records = new Map<string, string>()
  return {
    async getSnapshot(key) {
      const json = records.get(key)
      return json === undefined ? undefined : JSON.parse(json)
    },
    async putSnapshot(key, value) {
      records.set(key, JSON.stringify(value))
    },
  }
}

/** @internal The task's record, or undefined. */
export async function loadTask(tasks: TaskStore, id: string): Promise<TaskRecord | undefined> {
  return readTaskRecord(await tasks.getSnapshot(taskKey(id)), id)
}

/** @internal Saves the task's record whole. */
export function saveTask(tasks: TaskStore, record: TaskRecord): Promise<void> {
  return tasks.putSnapshot(taskKey(record.id), record)
}

/** @internal Moves the task to `state`, with an agent status message of `parts` (kept in history). */
export function setStatus(record: TaskRecord, state: TaskState, parts: Part[] | undefined): void {
  record.state = state
  record.timestamp = new Date().toISOString()
  record.statusMessage = parts ? agentMessage(record, parts, randomUUID()) : undefined
  if (record.statusMessage) record.history.push(record.statusMessage)
}

/** @internal The status text of a request: its prompt, and its url on a line of its own. */
export function promptText(request: Request): string {
  return request.url ? `${request.prompt}\n${request.url}` : request.prompt
}

/** @internal The `result` artifact holding `text`. */
export function resultArtifact(text: string): Artifact {
  return {
    artifactId: "result",
    name: "result",
    description: "",
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
  }
}

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
