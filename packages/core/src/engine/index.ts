// `@toolnexus/core/engine`: what every durable-execution engine package shares (agent
// definitions, the run, the fault guard, the one-decision rule). No engine code.
export { defineEngineAgent, engineExecutor, runEngineAgent } from "./engine-agent.js"
export type {
  EngineAgent,
  EngineAgentOptions,
  EngineExecutor,
  EngineTreeRunner,
  EngineTurn,
  EngineTurnOptions,
} from "./engine-agent.js"
export { resultWait, untilResultWait } from "../host/result-wait.js"
export { markResultAtPark, settlesResultAtPark } from "../host/result-at-park.js"
export type { ResultWait } from "../host/result-wait.js"
export { engineEventLog, followEngineEvents, tailEngineEvents } from "./engine-events.js"
export type { EngineEventLog, EngineEventSource } from "./engine-events.js"
export {
  EXPIRED,
  checkRunId,
  decide,
  decisionOf,
  engineEntryOf,
  enginePrompt,
  engineRunOptions,
  namespaceOf,
  turnWorkflowId,
} from "./engine-protocol.js"
export type { EngineDecided, EngineRunInput, HeldRequest } from "./engine-protocol.js"
export { RunAbort, withRunAbort } from "../internal/run-abort.js"
