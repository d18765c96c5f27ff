import { type Client, type Tool, type Toolkit, createClient, createToolkit, hostAgent } from "@toolnexus/core"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, beforeEach } from "vitest"
import {
  type DurableStore,
  type StoreHost,
  type StoreHostAgent,
  type StoreHostOptions,
  createMemoryStore,
  createStoreHost,
} from "../src/index.js"

// The setup the store host's tests share: a fake model server for the file, a client of it on a
// store, and a store host serving one agent of that client.

/**
 * The fake model server of the calling test file: started before its tests, closed after them,
 * and with `reset`, emptied of queued replies and seen requests before each test.
 */
export function useFakeModel(opts: { reset?: boolean } = {}): () => FakeLLMServer {
  let server: FakeLLMServer | undefined
  beforeAll(async () => {
    server = await createFakeLLMServer()
  })
  if (opts.reset) beforeEach(() => server?.reset())
  afterAll(() => server?.close())
  return () => {
    if (!server) throw new Error("the fake model server starts in beforeAll")
    return server
  }
}

/** A client of the fake model (OpenAI style) keeping its conversations in `store`. */
export function modelClient(
  server: FakeLLMServer,
  store: DurableStore,
  opts: { retries?: number } = {},
): Client {
  return createClient({
    baseUrl: `${server.url}/v1`,
    style: "openai",
    model: "m",
    apiKey: "k",
    store,
    ...opts,
  })
}

/** What {@link hostFixture} builds its host from; every field has a default. */
export interface HostFixtureOptions {
  /** The store; a new memory store by default. */
  store?: DurableStore
  /** The agent's name; default `"a"`. */
  name?: string
  /** The agent's tools. */
  tools?: Tool[]
  /** The client's `retries` (its default when absent). */
  retries?: number
  /** More options of the host (`sweepEveryMs` is false unless given). */
  host?: Partial<Omit<StoreHostOptions, "store" | "agents">>
}

/**
 * A store host on a store serving one agent: a client of the fake model `server` with
 * `tools`. The host sweeps only when `host.sweepEveryMs` says so.
 */
export async function hostFixture(
  server: FakeLLMServer,
  opts: HostFixtureOptions = {},
): Promise<{
  store: DurableStore
  client: Client
  toolkit: Toolkit
  agent: StoreHostAgent
  host: StoreHost
}> {
  const store = opts.store ?? createMemoryStore()
  const client = modelClient(server, store, opts.retries !== undefined ? { retries: opts.retries } : {})
  const toolkit = await createToolkit({ extraTools: opts.tools ?? [] })
  const agent = hostAgent({ name: opts.name ?? "a", client, toolkit }) as StoreHostAgent
  const host = createStoreHost({ store, agents: [agent], sweepEveryMs: false, ...opts.host })
  return { store, client, toolkit, agent, host }
}

/** `store` as seen through a proxy that notes its reads (`get`, `getSnapshot`) in `reads`, as `"<method> <key>"`. */
export function countingReads(store: DurableStore): { store: DurableStore; reads: string[] } {
  const reads: string[] = []
  const counted = new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver)
      if (typeof value !== "function") return value
      return (...args: unknown[]) => {
        if (key === "get" || key === "getSnapshot") reads.push(`${String(key)} ${String(args[0])}`)
        return value.apply(target, args)
      }
    },
  })
  return { store: counted, reads }
}
