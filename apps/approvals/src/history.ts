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
  store: Pick<DurableStore, "putSnapshot" | "getSnapshot" | "deleteSnapshot">
  /**
   * This instance's name in the store. Each instance appends only to its own list, so two
   * instances never overwrite each other's entries; keep it stable across restarts
   * (e.g. host and port). Default: a random id.
   */
  writerId?: string
  /** Entries per stored page; an answer rewrites only the newest page. Default 100. */
  pageSize?: number
  /** Pages each writer keeps, the oldest dropped first; default 10 (so the last 900 to 1,000 answers). */
  keepPages?: number
}

/** Where a writer's pages are: `first`..`last`, and its newest entry (what changes on every answer). */
interface WriterHead {
  first: number
  last: number
  latest: string
}

const WRITERS_KEY = "approvals:history:writers"
const HEAD_PREFIX = "approvals:history:head:"
const PAGE_PREFIX = "approvals:history:page:"

/**
 * A history kept in the store's snapshots, so it survives reloads and restarts and is seen
 * by every instance. Snapshots are replaced whole and have no compare-and-set, so each
 * instance writes only its own pages (its writes are serialised in-process), and a small
 * registry names the writers; registering re-reads until its name is there, which repairs
 * the rare race of two instances registering at the same moment. An answer writes the
 * newest page and the writer's head, never the whole history.
 */
export function createHistory(opts: HistoryOptions): History {
  const { store } = opts
  const writerId = opts.writerId ?? randomUUID()
  const pageSize = opts.pageSize ?? 100
  const keepPages = opts.keepPages ?? 10
  // This writer's head and newest page, read once and then kept in step with every write.
  let own: Promise<{ head: WriterHead; page: HistoryEntry[] }> | undefined
  let queue: Promise<unknown> = Promise.resolve()
  let registered = false

  const pageKey = (writer: string, n: number) => `${PAGE_PREFIX}${writer}:${n}`
  const readPage = async (key: string): Promise<HistoryEntry[]> => {
    const value = await store.getSnapshot(key)
    return Array.isArray(value) ? (value as HistoryEntry[]) : []
  }
  const readHead = async (writer: string): Promise<WriterHead | undefined> => {
    const value = (await store.getSnapshot(HEAD_PREFIX + writer)) as Partial<WriterHead> | undefined
    return typeof value?.first === "number" &&
      typeof value.last === "number" &&
      typeof value.latest === "string"
      ? (value as WriterHead)
      : undefined
  }
  const writers = async (): Promise<string[]> => {
    const value = await store.getSnapshot(WRITERS_KEY)
    const names = Array.isArray(value) ? value.filter((w): w is string => typeof w === "string") : []
    return [...new Set([...names, writerId])]
  }

  async function register(): Promise<void> {
    for (let attempt = 0; !registered && attempt < 8; attempt++) {
      const known = (await store.getSnapshot(WRITERS_KEY)) as string[] | undefined
      if (Array.isArray(known) && known.includes(writerId)) {
        registered = true
        return
      }
      await store.putSnapshot(WRITERS_KEY, [...(Array.isArray(known) ? known : []), writerId])
      // Another instance may have written its own list of names at the same moment.
      await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20))
    }
  }

  async function append(entry: HistoryEntry): Promise<void> {
    own ??= (async () => {
      const head = (await readHead(writerId)) ?? { first: 0, last: 0, latest: "" }
      return { head, page: await readPage(pageKey(writerId, head.last)) }
    })()
    const { head, page } = await own
    const next = { ...head, latest: `${entry.requestId}@${entry.answeredAt}` }
    let entries = [...page.filter((e) => e.requestId !== entry.requestId), entry]
    if (entries.length > pageSize) {
      next.last++
      entries = [entry]
    }
    await store.putSnapshot(pageKey(writerId, next.last), entries)
    const dropped: number[] = []
    while (next.last - next.first >= keepPages) dropped.push(next.first++)
    await store.putSnapshot(HEAD_PREFIX + writerId, next)
    own = Promise.resolve({ head: next, page: entries })
    // Only after the head no longer names them.
    for (const n of dropped) await store.deleteSnapshot(pageKey(writerId, n))
    if (!registered) await register()
  }

  return {
    record(entry) {
      const write = queue.then(() => append(entry))
      queue = write.catch(() => {
        own = undefined
      })
      return write
    },

    async version() {
      const heads = await Promise.all((await writers()).map(readHead))
      return heads.map((head) => head?.latest ?? "").join(",")
    },

    async list(filter = {}) {
      const pages = await Promise.all(
        (await writers()).map(async (writer) => {
          const head = await readHead(writer)
          if (!head) return []
          const keys = Array.from({ length: head.last - head.first + 1 }, (_, i) =>
            pageKey(writer, head.first + i),
          )
          return (await Promise.all(keys.map(readPage))).flat()
        }),
      )
      const latest = new Map<string, HistoryEntry>()
      for (const entry of pages.flat()) {
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
