import { ConfigError } from "@toolnexus/core"
import type { DurableStore } from "../durable-store.js"
import { openStore } from "../open-store.js"

/**
 * The store a crash-point kit run tests, as every worker process opens it: a URL that
 * `openStore` understands, or a module whose export (default `createStore`) is called with
 * `{ opTimeoutMs }` and returns the store — the way to run the kit on a custom store.
 */
export type KitStore =
  | {
      /** A store URL that `openStore` understands; the kit appends `opTimeoutMs` as a query parameter. */
      url: string
    }
  | {
      /**
       * The module each worker `import()`s: a file URL (`new URL("./my-store.js", import.meta.url).href`)
       * or a package name; a relative path would resolve against the kit's own file.
       */
      module: string
      /** The name of the module's factory export; default `"createStore"`. */
      export?: string
    }

/** @internal What a worker is asked to do. */
export interface CrashJob {
  role: "halt" | "resume" | "recover" | "retry"
  flow: "askWithAnswer" | "resumeRuntime"
  store: KitStore
  /** Conversation id (askWithAnswer) or runtime key (resumeRuntime). */
  id: string
  marker: string
  answer?: unknown
  die?: string
  llmUrl: string
  effects: string
  leaseMs: number
  opTimeoutMs: number
  maxAttempts: number
}

/** @internal Opens the kit's store in this process, with the kit's operation deadline. */
export async function openKitStore(store: KitStore, opTimeoutMs: number): Promise<DurableStore> {
  if ("url" in store) {
    const separator = store.url.includes("?") ? "&" : "?"
    return openStore(`${store.url}${separator}opTimeoutMs=${opTimeoutMs}`)
  }
  const mod = (await import(store.module)) as Record<string, unknown>
  const factory = mod[store.export ?? "createStore"]
  if (typeof factory !== "function") {
    throw new ConfigError(
      `the crash-point kit needs ${store.module} to export a function ${store.export ?? "createStore"}`,
    )
  }
  return (await factory({ opTimeoutMs })) as DurableStore
}
