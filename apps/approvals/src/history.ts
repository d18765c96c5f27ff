import { randomUUID } from "node:crypto"
import type { DurableStore } from "@toolnexus/durable"

/** One answered request: who decided what, when, and what the run did next. */
export interface HistoryEntry {
  requestId: string
  /** The run the answer resumed: a conversation id or a team run's runtime key. */
  runId: string
  kind: string
  prompt: string
  tool?: string
  /** The call's arguments as the request showed them (before any edit by the approver). */
  args?: Record<string, unknown>
  /** The agent path of a sub-agent tree's request. */
  path?: string[]
  /** The signed-in user, API token or webhook sender that answered. */
  answeredBy: string
  via: "page" | "api" | "webhook"
  /** RFC 3339. */
  answeredAt: string
  decision: { ok: boolean; reason?: string; data?: Record<string, unknown> }
  /** Where the run stands after the answer: its status and text, the next request it waits on, or the error. */
  outcome: { status: string; text?: string; nextRequestId?: string; error?: string }
}

/** Filters of {@link History.list}; all optional and combined with "and". */
export interface HistoryFilter {
  decision?: "approved" | "declined"
  /** Exact `answeredBy`. */
  user?: string
  /** Exact tool name. */
  tool?: string
  /** Exact outcome status (`done`, `pending`, `error`, …). */
  outcome?: string
  /** Case-insensitive text in the prompt, request id, run id or reason. */
  text?: string
  /** At most this many entries, newest first; default 100. */
  limit?: number
}

/** The persisted history of answers, shared by every instance on the store. */
export interface History {
  /** Records an answer (a later record for the same request id replaces the earlier one, e.g. after a retry). */
  record(entry: HistoryEntry): Promise<void>
  /** Entries matching the filter, newest first. */
  list(filter?: HistoryFilter): Promise<HistoryEntry[]>
  /** A short value that changes whenever any instance records an answer (cheap: no entry is read). */
  version(): Promise<string>
}

/** Options of {@link createHistory}. */
export interface HistoryOptions {
  store: Pick<DurableStore, "putSnapshot" | "getSnapshot">
  /**
   * This instance's name in the store. Each instance appends only to its own list, so two
   * instances never overwrite each other's entries; keep it stable across restarts
   * (e.g. host and port). Default: a random id.
   */
  writerId?: string
  /** How many entries each writer keeps, oldest dropped first; default 1000. */
  keepPerWriter?: number
}

const WRITERS_KEY = "approvals:history:writers"
const WRITER_PREFIX = "approvals:history:writer:"
const HEAD_PREFIX = "approvals:history:head:"

/**
 * A history kept in the store's snapshots, so it survives reloads and restarts and is seen
 * by every instance. Snapshots are replaced whole and have no compare-and-set, so each
 * instance writes its own list (its writes are serialised in-process) and a small registry
 * names the lists; registering re-reads until its name is there, which repairs the rare race
 * of two instances registering at the same moment.
 */
export function createHistory(opts: HistoryOptions): History {
  const { store } = opts
  const writerId = opts.writerId ?? randomUUID()
  const keep = opts.keepPerWriter ?? 1000
  let own: Promise<HistoryEntry[]> | undefined
  let queue: Promise<unknown> = Promise.resolve()
  let registered = false

  const readList = async (key: string): Promise<HistoryEntry[]> => {
    const value = await store.getSnapshot(key)
    return Array.isArray(value) ? (value as HistoryEntry[]) : []
  }
  const writers = async (): Promise<string[]> => {
    const value = await store.getSnapshot(WRITERS_KEY)
    return Array.isArray(value) ? value.filter((w): w is string => typeof w === "string") : []
  }

  async function register(): Promise<void> {
    for (let attempt = 0; !registered && attempt < 8; attempt++) {
      const known = await writers()
      if (known.includes(writerId)) {
        registered = true
        return
      }
      await store.putSnapshot(WRITERS_KEY, [...known, writerId])
      // Another instance may have written its own list of names at the same moment.
      await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20))
    }
  }

  return {
    record(entry) {
      const write = queue.then(async () => {
        own ??= readList(WRITER_PREFIX + writerId)
        const entries = (await own).filter((e) => e.requestId !== entry.requestId)
        entries.push(entry)
        const kept = entries.slice(-keep)
        own = Promise.resolve(kept)
        await store.putSnapshot(WRITER_PREFIX + writerId, kept)
        await store.putSnapshot(HEAD_PREFIX + writerId, `${entry.requestId}@${entry.answeredAt}`)
        if (!registered) await register()
      })
      queue = write.catch(() => {
        own = undefined
      })
      return write
    },

    async version() {
      const names = [...new Set([...(await writers()), writerId])]
      const heads = await Promise.all(names.map((name) => store.getSnapshot(HEAD_PREFIX + name)))
      return heads.map((head) => String(head ?? "")).join(",")
    },

    async list(filter = {}) {
      const names = new Set(await writers())
      names.add(writerId)
      const lists = await Promise.all([...names].map((name) => readList(WRITER_PREFIX + name)))
      const latest = new Map<string, HistoryEntry>()
      for (const entry of lists.flat()) {
        const seen = latest.get(entry.requestId)
        if (!seen || seen.answeredAt < entry.answeredAt) latest.set(entry.requestId, entry)
      }
      return [...latest.values()]
        .filter((entry) => matches(entry, filter))
        .sort((a, b) => (a.answeredAt < b.answeredAt ? 1 : a.answeredAt > b.answeredAt ? -1 : 0))
        .slice(0, filter.limit ?? 100)
    },
  }
}

function matches(entry: HistoryEntry, filter: HistoryFilter): boolean {
  if (filter.decision === "approved" && !entry.decision.ok) return false
  if (filter.decision === "declined" && entry.decision.ok) return false
  if (filter.user !== undefined && entry.answeredBy !== filter.user) return false
  if (filter.tool !== undefined && entry.tool !== filter.tool) return false
  if (filter.outcome !== undefined && entry.outcome.status !== filter.outcome) return false
  if (filter.text) {
    const needle = filter.text.toLowerCase()
    const haystack = [entry.prompt, entry.requestId, entry.runId, entry.decision.reason ?? ""]
    if (!haystack.some((field) => field.toLowerCase().includes(needle))) return false
  }
  return true
}
