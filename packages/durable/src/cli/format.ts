import { type AnswerDecision, type PendingEntry, expiryTime, isExpired, runIdOfEntry } from "@toolnexus/core"
import type { FailedEntry } from "../durable-store.js"

/** @internal "approved", or "declined (reason)". */
export function describeDecision(decision: AnswerDecision): string {
  const verb = decision.ok ? "approved" : "declined"
  return decision.reason ? `${verb} (${decision.reason})` : verb
}

/** @internal Open requests as a fixed-width table, one row each. */
export function formatTable(entries: PendingEntry[], now: number): string {
  return grid(
    ["REQUEST", "KIND", "RUN", "STATE", "WAITING", "EXPIRES", "WHAT"],
    entries.map((entry) => [
      entry.request.id,
      entry.request.kind,
      runOf(entry),
      entry.state,
      age(now - Date.parse(entry.since)),
      expires(entry, now),
      clip(what(entry), 60),
    ]),
  )
}

/** @internal Failed requests, one row each, with the error of their last resume. */
export function formatFailed(entries: FailedEntry[], now: number): string {
  return grid(
    ["REQUEST", "KIND", "RUN", "ATTEMPTS", "WAITING", "LAST ERROR"],
    entries.map((entry) => [
      entry.request.id,
      entry.request.kind,
      runOf(entry),
      String(entry.attempts),
      age(now - Date.parse(entry.since)),
      clip(`${entry.lastError.code ? `${entry.lastError.code}: ` : ""}${entry.lastError.message}`, 60),
    ]),
  )
}

/** Rows under a header, each column as wide as its widest cell. */
function grid(header: string[], rows: string[][]): string {
  const widths = header.map((title, i) =>
    Math.max(title.length, ...rows.map((row) => (row[i] as string).length)),
  )
  return [header, ...rows]
    .map((row) =>
      row
        .map((cell, i) => cell.padEnd(widths[i] as number))
        .join("  ")
        .trimEnd(),
    )
    .join("\n")
}

/** @internal One request, a field a line. */
export function formatEntry(entry: PendingEntry | FailedEntry, now: number): string {
  const { request } = entry
  const lastError =
    entry.state === "failed"
      ? `${entry.lastError.code ? `${entry.lastError.code}: ` : ""}${entry.lastError.message}`
      : undefined
  const data = request.data as Record<string, unknown> | undefined
  const lines: [string, string | undefined][] = [
    ["request", request.id],
    ["kind", request.kind],
    ["run", runOf(entry)],
    ["conversation", entry.conversationId],
    ["path", entry.path?.join(" / ")],
    ["state", `${entry.state} (${entry.attempts} attempt${entry.attempts === 1 ? "" : "s"})`],
    ["last error", lastError],
    ["waiting since", `${entry.since} (${age(now - Date.parse(entry.since))})`],
    [
      "expires",
      request.expiresAt === undefined ? undefined : `${request.expiresAt} (${expires(entry, now)})`,
    ],
    ["prompt", request.prompt],
    ["tool", typeof data?.tool === "string" ? data.tool : undefined],
    ["args", data?.args === undefined ? undefined : JSON.stringify(data.args, null, 2)],
  ]
  const shown = lines.filter((line): line is [string, string] => line[1] !== undefined)
  const width = Math.max(...shown.map(([name]) => name.length))
  return shown
    .map(
      ([name, value]) =>
        `${`${name}:`.padEnd(width + 2)}${value.replaceAll("\n", `\n${" ".repeat(width + 2)}`)}`,
    )
    .join("\n")
}

function runOf(entry: Pick<PendingEntry, "runtimeKey" | "conversationId">): string {
  return runIdOfEntry(entry)
}

function what(entry: PendingEntry): string {
  const data = entry.request.data as Record<string, unknown> | undefined
  const tool = typeof data?.tool === "string" ? `${data.tool}: ` : ""
  return `${tool}${entry.request.prompt}`.replace(/\s+/g, " ")
}

function expires(entry: Pick<PendingEntry, "request">, now: number): string {
  const at = expiryTime(entry.request)
  if (at === undefined) return "-"
  return isExpired(entry.request, now) ? "expired" : `in ${age(at - now)}`
}

/** A duration as an operator reads it: 45s, 12m, 3h, 2d. */
function age(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return "-"
  const s = Math.floor(ms / 1000)
  if (s < 60) return `${s}s`
  if (s < 3600) return `${Math.floor(s / 60)}m`
  if (s < 86_400) return `${Math.floor(s / 3600)}h`
  return `${Math.floor(s / 86_400)}d`
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`
}
