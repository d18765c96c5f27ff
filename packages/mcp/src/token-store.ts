/**
 * Where OAuth state for remote servers lives: tokens, the registered client and an
 * authorization in progress, one opaque record per server name. It is the host's: toolnexus
 * keeps no credentials anywhere else (not in transcripts, requests, answers, logs or errors).
 * Share one durable store between processes so a login started in one finishes in another.
 */
export interface TokenStore {
  /** The record last set for `server`; `undefined` when there is none. */
  get(server: string): Promise<unknown>
  /** Replaces `server`'s record (the value is opaque: store it as it is). */
  set(server: string, tokens: unknown): Promise<void>
}

/** @internal The default: tokens live as long as the process. */
export function memoryTokenStore(): TokenStore {
  const records = new Map<string, unknown>()
  return {
    get: async (server) => records.get(server),
    set: async (server, tokens) => {
      records.set(server, tokens)
    },
  }
}
