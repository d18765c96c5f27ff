import type { PendingEntry } from "../suspension/pending-entry.js"
import { runIdOfEntry } from "../suspension/pending-entry.js"
import type { HostListOptions, RunHost } from "./run-host.js"

/**
 * The open requests run `runId` waits on, as `host` lists them (`listPending({ runId })`),
 * checked entry by entry: a host that ignores the `runId` filter (one written before it, or
 * elsewhere) still never hands a door another run's request. What every door asks to find its
 * own run's request.
 *
 * @example
 * const [open] = await pendingOfRun(host, "ada/chat-1")
 */
export async function pendingOfRun(
  host: Pick<RunHost, "listPending">,
  runId: string,
  opts: Omit<HostListOptions, "runId"> = {},
): Promise<PendingEntry[]> {
  const entries = await host.listPending({ ...opts, runId })
  return entries.filter((entry) => runIdOfEntry(entry) === runId)
}
