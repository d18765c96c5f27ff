export { createRuntime, restoreRuntime } from "./runtime.js"
export type { Runtime } from "./runtime.js"
export type { ParkedRequest, ResumeOptions } from "./parking.js"
export type { RuntimeEvent, RuntimeEventsOptions } from "./runtime-events.js"
export { agent } from "./agent.js"
export type { Agent } from "./agent.js"
export { createVirtualClock, systemClock } from "./clock.js"
export type { VirtualClock } from "./clock.js"
export { AgentsError, ClosedError, InboxFullError, RuntimeError } from "./errors.js"
export type { RuntimeErrorReason } from "./errors.js"
export { SNAPSHOT_VERSION } from "./snapshot.js"
export type { HandleSnapshot, RuntimeSnapshot } from "./snapshot.js"
export type { Spend } from "./budget.js"
export { TICK_CHANNEL, TIMER_CHANNEL } from "./inbox.js"
export type {
  AgentDef,
  Budget,
  Clock,
  CloseReason,
  Handle,
  HandleState,
  HandleView,
  InboxItem,
  LLMSettings,
  RuntimeOptions,
  TaskResult,
} from "./types.js"
export {
  BOOTSTRAP_ORDER,
  HEARTBEAT_OK,
  HEARTBEAT_PROMPT,
  composeSoul,
  fromDir,
  memoryTool,
} from "./persona.js"
export type { FromDirOptions } from "./persona.js"
export { startAgent } from "./start-agent.js"
export type { HeartbeatOptions, StartedAgent } from "./start-agent.js"
export type { EngineAgent, EngineAgentOptions } from "./engine-agent.js"
export { runEngineTree } from "./engine-tree.js"
