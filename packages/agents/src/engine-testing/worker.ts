// A worker process of the engine contract suite: serves the contract's agents through the
// engine adapter module named by TNX_ENGINE_ADAPTER until it is killed.
import { pathToFileURL } from "node:url"
import { contractAgents } from "./contract-agents.js"
import type { EngineAdapter } from "./engine-contract-types.js"

const { TNX_ENGINE_ADAPTER, LLM_URL, LOG_FILE } = process.env
if (!TNX_ENGINE_ADAPTER || !LLM_URL || !LOG_FILE)
  throw new Error("the engine worker needs TNX_ENGINE_ADAPTER, LLM_URL and LOG_FILE")
const adapter = (await import(pathToFileURL(TNX_ENGINE_ADAPTER).href)) as EngineAdapter
const agents = await contractAgents(adapter.define, { llmUrl: LLM_URL, logFile: LOG_FILE })
const worker = await adapter.serve(agents, process.env)
process.stdout.write("ready\n")
process.on("SIGTERM", () => {
  void worker.close().then(() => process.exit(0))
})
