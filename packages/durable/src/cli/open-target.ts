import { existsSync } from "node:fs"
import { createRequire } from "node:module"
import { isAbsolute, join, resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { ConfigError, type RunHost } from "@toolnexus/core"
import type { DurableStore } from "../durable-store.js"
import { type StoreHost, type StoreHostAgent, createStoreHost } from "../host/store-host.js"
import { openStore, parseStoreUrl } from "../open-store.js"
import type { CliCommand } from "./args.js"

/** @internal The host a command talks to, and how to let it go. */
export interface CliTarget {
  host: RunHost | StoreHost
  /** Whether the host runs the runs' agents here (`--agents`), so decisions are applied now. */
  applies: boolean
  /** Whether the host is an engine's connection (the engine applies decisions at once). */
  engine: boolean
  close(): Promise<void>
}

const SCHEME = /^[a-z][a-z0-9+.-]*:/i

/**
 * @internal The store URL `--store` names: a URL `openStore` reads, or a path to an existing
 * SQLite file. A SQLite file that does not exist is refused, never created empty.
 */
export function storeUrlOf(value: string, cwd: string): string {
  // A Windows drive ("C:\\…") is a path, not a scheme.
  const url = SCHEME.test(value) && !/^[a-z]:[\\/]/i.test(value) ? value : `sqlite:${resolve(cwd, value)}`
  const target = parseStoreUrl(url)
  if (target.backend === "sqlite" && target.path !== ":memory:") {
    const path = isAbsolute(target.path) ? target.path : resolve(cwd, target.path)
    if (!existsSync(path)) throw new ConfigError(`no SQLite database at ${path}`)
    return url.startsWith("sqlite:") && isAbsolute(target.path) ? url : `sqlite:${path}`
  }
  return url
}

/** @internal Opens what the command line names: a store host, or an engine's connection. */
export async function openTarget(cli: CliCommand, cwd: string): Promise<CliTarget> {
  if (cli.store !== undefined) {
    const store = await openStore(storeUrlOf(cli.store, cwd))
    try {
      // Fail here, in one line, when the database cannot be reached.
      await store.listPending({ limit: 1 })
      const agents = cli.agents === undefined ? [] : await loadAgents(cli.agents, store, cwd)
      const host = createStoreHost({ store, agents, sweepEveryMs: false })
      return {
        host,
        applies: agents.length > 0,
        engine: false,
        async close() {
          await host.close()
          await store.close()
        },
      }
    } catch (error) {
      await store.close().catch(() => {})
      throw error
    }
  }
  if (cli.restate !== undefined) {
    const { connectRestate } = (await importFrom("@toolnexus/restate", cwd)) as {
      connectRestate(opts: { ingress: string; admin?: string; namespace?: string }): RunHost
    }
    const host = connectRestate({
      ingress: cli.restate,
      ...(cli.restateAdmin !== undefined ? { admin: cli.restateAdmin } : {}),
      ...(cli.namespace !== undefined ? { namespace: cli.namespace } : {}),
    })
    return { host, applies: true, engine: true, close: () => host.close() }
  }
  const { connectDbos } = (await importFrom("@toolnexus/dbos", cwd)) as {
    connectDbos(opts: { systemDatabaseUrl: string; namespace?: string }): RunHost
  }
  const host = connectDbos({
    systemDatabaseUrl: cli.dbos as string,
    ...(cli.namespace !== undefined ? { namespace: cli.namespace } : {}),
  })
  return { host, applies: true, engine: true, close: () => host.close() }
}

/** The agents of an `--agents` module: its default (or `agents`) export, a list or a function of the store. */
async function loadAgents(specifier: string, store: DurableStore, cwd: string): Promise<StoreHostAgent[]> {
  const url = pathToFileURL(resolve(cwd, specifier)).href
  let mod: Record<string, unknown>
  try {
    mod = await import(url)
  } catch (error) {
    throw new ConfigError(`cannot load --agents ${specifier}: ${(error as Error).message}`)
  }
  const exported = mod.default ?? mod.agents
  const agents = typeof exported === "function" ? await exported({ store }) : exported
  if (!Array.isArray(agents))
    throw new ConfigError(
      `--agents ${specifier} must export (default) a list of hostAgent(…) or a function ({ store }) => that list`,
    )
  return agents as StoreHostAgent[]
}

/** Imports an optional package from the project the command runs in, else from beside this one. */
async function importFrom(name: string, cwd: string): Promise<unknown> {
  try {
    return await import(pathToFileURL(createRequire(join(cwd, "noop.js")).resolve(name)).href)
  } catch {
    try {
      return await import(name)
    } catch {
      throw new ConfigError(`${name} is not installed here: npm install ${name}`)
    }
  }
}
