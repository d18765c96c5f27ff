export { openStore } from "./open-store.js"
export { createMemoryStore } from "./memory/memory-store.js"
export type {
  AnswerClaim,
  ClaimOptions,
  CommitSave,
  DurableStore,
  ExpiredClaim,
  FailedEntry,
  ListExpiredClaimsOptions,
  ListFailedOptions,
  ListPendingOptions,
  PendingEntry,
  PutSnapshotOptions,
  ReleaseOptions,
  RenewOptions,
  ResumeCommit,
  RuntimeHold,
} from "./durable-store.js"
export type { DurableStoreOptions } from "./store-engine/store-base.js"
export { ClaimLostError, CorruptDataError, RuntimeCollisionError, RuntimeHeldError } from "./errors.js"
export type { CorruptRow } from "./errors.js"
export { runWithAnswer } from "./resume/run-with-answer.js"
export type { RunWithAnswerOptions } from "./resume/run-with-answer.js"
export { askWithAnswer } from "./resume/ask-with-answer.js"
export type { AskWithAnswerOptions } from "./resume/ask-with-answer.js"
export {
  deliverAnswer,
  retryFailed,
  sweepExpiredClaims,
  sweepExpiredRequests,
} from "./resume/deliver-answer.js"
export type { DeliverOptions, DeliverResult, SweepResult } from "./resume/deliver-answer.js"
export { loadRuntime, resumeRuntime, saveRuntime } from "./resume/runtime-persistence.js"
export type { ResumeRuntimeOptions } from "./resume/runtime-persistence.js"
export { createStoreHost } from "./host/store-host.js"
export type { StoreHost, StoreHostAgent, StoreHostOptions, StoreHostSweep } from "./host/store-host.js"
export { createNotificationOutbox } from "./host/delivery.js"
export type { NotificationOutbox, NotificationOutboxOptions } from "./host/delivery.js"
export { startHostedRun } from "./host/hosted-run.js"
export type { HostedRunAgent, HostedRunResult, StartHostedRunOptions } from "./host/hosted-run.js"
