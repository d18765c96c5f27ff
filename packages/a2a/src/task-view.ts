import { type Artifact, Message, type Part, type StreamResponse, type Task, TaskState } from "@a2a-js/sdk"

/** An A2A task state by its spec name (`input-required`, …), as it appears in results and logs. */
export type A2ATaskState =
  | "submitted"
  | "working"
  | "completed"
  | "failed"
  | "canceled"
  | "rejected"
  | "input-required"
  | "auth-required"
  | "unknown"

const STATE_NAMES: Record<number, A2ATaskState> = {
  [TaskState.TASK_STATE_SUBMITTED]: "submitted",
  [TaskState.TASK_STATE_WORKING]: "working",
  [TaskState.TASK_STATE_COMPLETED]: "completed",
  [TaskState.TASK_STATE_FAILED]: "failed",
  [TaskState.TASK_STATE_CANCELED]: "canceled",
  [TaskState.TASK_STATE_REJECTED]: "rejected",
  [TaskState.TASK_STATE_INPUT_REQUIRED]: "input-required",
  [TaskState.TASK_STATE_AUTH_REQUIRED]: "auth-required",
}

/** @internal The spec name of an SDK task state. */
export function stateName(state: TaskState | undefined): A2ATaskState {
  return (state !== undefined && STATE_NAMES[state]) || "unknown"
}

/** A state by name, or as the SDK's enum (what a stored record holds). */
const named = (state: A2ATaskState | TaskState): A2ATaskState =>
  typeof state === "number" ? stateName(state) : state

/** @internal States after which the agent does nothing more on the task. */
export function isTerminal(state: A2ATaskState | TaskState): boolean {
  const name = named(state)
  return name === "completed" || name === "failed" || name === "canceled" || name === "rejected"
}

/** @internal States in which the agent waits for the caller. */
export function isInterrupted(state: A2ATaskState | TaskState): boolean {
  const name = named(state)
  return name === "input-required" || name === "auth-required"
}

/** @internal A text part in the SDK's object form. */
export function textPart(value: string): Part {
  return { content: { $case: "text", value }, metadata: undefined, filename: "", mediaType: "" }
}

/** @internal A data part in the SDK's object form. */
export function dataPart(value: Record<string, unknown>): Part {
  return { content: { $case: "data", value }, metadata: undefined, filename: "", mediaType: "" }
}

/**
 * @internal Text parts as they are and, with `withData`, data parts as JSON; other parts
 * (files, raw bytes) are skipped.
 */
export function partsText(parts: readonly Part[], separator: string, withData = false): string {
  const out: string[] = []
  for (const part of parts) {
    const content = part.content
    if (content?.$case === "text") out.push(content.value)
    else if (withData && content?.$case === "data") out.push(JSON.stringify(content.value))
  }
  return out.join(separator)
}

/** @internal The first data part's object, if any. */
export function firstData(parts: readonly Part[]): Record<string, unknown> | undefined {
  for (const part of parts) {
    const content = part.content
    if (content?.$case === "data" && content.value && typeof content.value === "object")
      return content.value as Record<string, unknown>
  }
  return undefined
}

/**
 * @internal What the caller knows of one remote task, folded from a `Task` and the stream
 * events after it. Artifacts keep their order of first appearance; a chunk with `append`
 * extends its artifact, one without replaces it.
 */
export class TaskView {
  id = ""
  contextId = ""
  state: A2ATaskState = "unknown"
  statusMessage: Message | undefined
  /** Set when the agent answered with a Message instead of a task. */
  reply: Message | undefined
  readonly #artifacts = new Map<string, Part[]>()

  /** Takes a whole task (a `SendMessage` or `GetTask` result, or a stream's first event). */
  takeTask(task: Task): void {
    this.id = task.id
    this.contextId = task.contextId
    this.state = stateName(task.status?.state)
    this.statusMessage = task.status?.message
    this.#artifacts.clear()
    for (const artifact of task.artifacts) this.#artifacts.set(artifact.artifactId, [...artifact.parts])
  }

  /** Folds one stream event in. */
  take(event: StreamResponse): void {
    const payload = event.payload
    if (!payload) return
    switch (payload.$case) {
      case "task":
        this.takeTask(payload.value)
        return
      case "message":
        this.reply = payload.value
        return
      case "statusUpdate": {
        const update = payload.value
        if (update.taskId) this.id = update.taskId
        if (update.contextId) this.contextId = update.contextId
        this.state = stateName(update.status?.state)
        this.statusMessage = update.status?.message
        return
      }
      case "artifactUpdate": {
        const update = payload.value
        if (update.artifact) this.#takeArtifact(update.artifact, update.append)
        return
      }
    }
  }

  #takeArtifact(artifact: Artifact, append: boolean): void {
    const parts = this.#artifacts.get(artifact.artifactId)
    if (append && parts) parts.push(...artifact.parts)
    else this.#artifacts.set(artifact.artifactId, [...artifact.parts])
  }

  /** The artifacts' text in order (chunks joined as they came, artifacts on their own lines). */
  artifactsText(): string {
    return [...this.#artifacts.values()].map((parts) => partsText(parts, "", true)).join("\n")
  }

  /** The status message's text parts by line. */
  statusText(): string {
    return this.statusMessage ? partsText(this.statusMessage.parts, "\n") : ""
  }

  /** The status message as A2A JSON (what a Request's `data.message` carries). */
  statusMessageJson(): Record<string, unknown> | undefined {
    return this.statusMessage ? (Message.toJSON(this.statusMessage) as Record<string, unknown>) : undefined
  }
}
