export { openStore } from "./open-store.js"
export type {
  AnswerClaim,
  ClaimOptions,
  DurableStore,
  ExpiredClaim,
  ListExpiredClaimsOptions,
  ListPendingOptions,
  PendingEntry,
} from "./durable-store.js"
export { runWithAnswer } from "./resume/run-with-answer.js"
export type { RunWithAnswerOptions } from "./resume/run-with-answer.js"
export { askWithAnswer, sweepExpiredClaims } from "./resume/ask-with-answer.js"
export type { AskWithAnswerOptions, SweepOptions } from "./resume/ask-with-answer.js"
export { loadRuntime, resumeRuntime, saveRuntime } from "./resume/runtime-persistence.js"
