import type { RuntimeOptions } from "@toolnexus/agents"
import {
  ConfigError,
  type RunHost,
  adoptConversationStore,
  hostAgent,
  isToolnexusError,
} from "@toolnexus/core"
import { type StoreHostAgent, createMemoryStore, createStoreHost } from "@toolnexus/durable"
import type { ChatHandlerOptions, ShorthandChatOptions } from "./chat-options.js"

/** The shorthand host's agent of the chats' turns. */
const CHAT_AGENT = "chat"
/** The shorthand host's agent that resumes saved runtimes (`runtime`); it never starts a run. */
const RUNTIME_AGENT = "chat-runtime"

/**
 * @internal The host and agent a handler talks to: `{ host, agent }` as given, or the
 * shorthand's `createStoreHost` over the client's store.
 *
 * @throws ConfigError for options that are neither form, both, or a shorthand whose store
 *   cannot host (not the client's, or not durable).
 */
export function hostOf(opts: ChatHandlerOptions): {
  host: RunHost
  agent: string
  /**
   * True for the shorthand's own store host: its `result` resolves when a run ends or parks in
   * this process, so a door's wait for it needs no signal to be released.
   */
  settlesHere?: boolean
} {
  const given = opts as Partial<ShorthandChatOptions> & { host?: RunHost; agent?: string }
  if (given.host !== undefined) {
    if (
      given.client !== undefined ||
      given.toolkit !== undefined ||
      given.store !== undefined ||
      given.runtime !== undefined
    )
      throw new ConfigError(
        "give `{ host, agent }` or the shorthand (`client`, `toolkit`, `store`, `runtime`), not both",
      )
    const host = given.host
    if (
      typeof host !== "object" ||
      host === null ||
      typeof host.deliverAnswer !== "function" ||
      typeof host.findRequest !== "function" ||
      typeof host.send !== "function"
    )
      throw new ConfigError("`host` must be a RunHost (createStoreHost, connectRestate, connectDbos)")
    if (typeof given.agent !== "string" || given.agent === "")
      throw new ConfigError("`agent` must name the hosted agent whose runs the chats are")
    return { host, agent: given.agent }
  }
  return { host: shorthandHost(given), agent: CHAT_AGENT, settlesHere: true }
}

function shorthandHost(opts: Partial<ShorthandChatOptions>): RunHost {
  const { client, runtime } = opts
  if (client === undefined || typeof client?.conversationStore !== "function")
    throw new ConfigError("`client` must be a toolnexus Client (or give `{ host, agent }`)")
  if (opts.store !== undefined && opts.store !== client.conversationStore())
    throw new ConfigError(
      "`store` must be the client's own store (client.conversationStore()): the chat's transcript lives there",
    )
  // A client made without a store gets a durable memory store here, before its first run:
  // its chats stay in client.conversationStore(), now with claims and decisions.
  adoptConversationStore(client, createMemoryStore())
  // A post's frontend tools (AG-UI) reach its run only, as the call's `relay` tools.
  const agents: StoreHostAgent[] = [hostAgent({ name: CHAT_AGENT, client, toolkit: opts.toolkit })]
  if (runtime !== undefined) agents.push(runtimeAgent(runtime))
  try {
    return createStoreHost({
      store: client.conversationStore() as Parameters<typeof createStoreHost>[0]["store"],
      agents,
      // The handler logs its refusals and failed runs itself: the host's would repeat them.
    })
  } catch (error) {
    if (!isToolnexusError(error, "TNX_CONFIG")) throw error
    throw new ConfigError(
      "the client's store cannot host the chats: give a client made with a durable store (createMemoryStore, SqliteStore, PostgresStore, RedisStore), one made without `store` that has saved no conversation yet, or `{ host, agent }`",
      { cause: error },
    )
  }
}

/** The agent answering requests of saved runtimes through the chat (it starts no tree). */
function runtimeAgent(runtime: RuntimeOptions): StoreHostAgent {
  const { store: _store, namespace: _namespace, executor: _executor, ...options } = runtime
  // `root` is never spawned: the chats' turns are the client agent's.
  return hostAgent({ name: RUNTIME_AGENT, runtime: { ...options, root: "" } })
}
