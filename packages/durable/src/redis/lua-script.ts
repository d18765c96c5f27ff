import { createHash } from "node:crypto"
import type { Redis } from "ioredis"

/**
 * @internal A Lua script run by SHA, loaded on demand. Works on a host's client without
 * registering commands on it (`defineCommand` would change the host's object).
 */
export class LuaScript {
  readonly #source: string
  readonly #sha: string

  constructor(source: string) {
    this.#source = source
    this.#sha = createHash("sha1").update(source).digest("hex")
  }

  /** Runs the script with `keys` as KEYS (the client's own key prefix applies) and `args` as ARGV. */
  async run(client: Redis, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    try {
      return await client.evalsha(this.#sha, keys.length, ...keys, ...args)
    } catch (error) {
      // A restarted or flushed server forgot the script: EVAL sends and caches it again.
      if (!(error instanceof Error) || !error.message.startsWith("NOSCRIPT")) throw error
      return client.eval(this.#source, keys.length, ...keys, ...args)
    }
  }
}
