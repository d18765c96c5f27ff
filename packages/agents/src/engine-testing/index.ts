// `@toolnexus/agents/engine-testing`: the contract suite every durable-execution engine package
// runs (needs vitest), and the agents its workers serve.
export { describeEngineContract, until } from "./engine-contract.js"
export type { ContractEngine, EngineAdapter, EngineContractInit } from "./engine-contract-types.js"
export { contractAgents } from "./contract-agents.js"
export type { DefineEngineAgent } from "./contract-agents.js"
export { describeHostContract } from "./host-contract.js"
export type { HostContractInit } from "./host-contract.js"
