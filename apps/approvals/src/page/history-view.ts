import type { HistoryEntry, HistoryFilter } from "../history.js"
import { ago, breadcrumbs, escapeHtml, timeTag } from "./html.js"

/** The filter form and the `#history` section, the body of `GET /history`. */
export function renderHistoryBody(input: {
  entries: HistoryEntry[]
  filter: HistoryFilter
  now: number
}): string {
  const { filter } = input
  const option = (value: string, label: string, current: string | undefined) =>
    `<option value="${value}"${current === value ? " selected" : ""}>${label}</option>`
  const text = (name: string, label: string, value: string | undefined, extra = "") =>
    `<label><span>${label}</span> <input name="${name}" value="${escapeHtml(value ?? "")}"${extra} autocomplete="off"></label>`
  return `<form id="filters" class="filters" method="get" action="/history" role="search">
<label><span>Decision</span> <select name="decision">${option("", "any", filter.decision ?? "")}${option("approved", "approved", filter.decision)}${option("declined", "declined", filter.decision)}</select></label>
${text("user", "Who", filter.user)}
${text("tool", "Tool", filter.tool)}
<label><span>Outcome</span> <select name="outcome">${option("", "any", filter.outcome ?? "")}${["done", "pending", "running", "incomplete", "error"].map((s) => option(s, s, filter.outcome)).join("")}</select></label>
${text("q", "Search <kbd>/</kbd>", filter.text, ' type="search" id="search"')}
<button type="submit">Filter</button> <a href="/history">Clear</a>
</form>
${renderHistorySection(input)}`
}

/** The `#history` section alone, swapped in by the page when an answer is recorded. */
export function renderHistorySection({ entries, now }: { entries: HistoryEntry[]; now: number }): string {
  if (entries.length === 0) return `<section id="history"><p class="empty">No answers yet.</p></section>`
  const rows = entries.map((entry) => renderRow(entry, now)).join("\n")
  return `<section id="history"><table>
<thead><tr><th>When</th><th>Who</th><th>Decision</th><th>Request</th><th>Outcome</th></tr></thead>
<tbody>
${rows}
</tbody></table></section>`
}

function renderRow(entry: HistoryEntry, now: number): string {
  const { decision, outcome } = entry
  const changes = changesOf(entry)
  const verdict = decision.ok ? (changes ? "approved with changes" : "approved") : "declined"
  const answerData =
    decision.data === undefined
      ? ""
      : `<details><summary>answer data</summary><pre>${escapeHtml(JSON.stringify(decision.data, null, 2))}</pre></details>`
  const reason = decision.ok ? "" : `<div class="reason">${escapeHtml(decision.reason ?? "declined")}</div>`
  const result =
    outcome.error !== undefined
      ? `<span class="status status-error">error</span> <span class="error-text">${escapeHtml(outcome.error)}</span>`
      : `<span class="status status-${escapeHtml(outcome.status)}">${escapeHtml(outcome.status)}</span> ${escapeHtml(outcome.text ?? "")}${outcome.nextRequestId ? ` <span class="note">now waits on <code>${escapeHtml(outcome.nextRequestId)}</code></span>` : ""}`
  return `<tr data-request-id="${escapeHtml(entry.requestId)}">
<td>${timeTag(entry.answeredAt, `${ago(now - Date.parse(entry.answeredAt))} ago`)}</td>
<td>${escapeHtml(entry.answeredBy)} <span class="note">via ${escapeHtml(entry.via)}</span></td>
<td><span class="verdict verdict-${decision.ok ? "ok" : "no"}">${verdict}</span>${reason}${changes}${answerData}</td>
<td>${entry.tool ? `<strong class="tool">${escapeHtml(entry.tool)}</strong> ` : ""}<span class="kind">${escapeHtml(entry.kind)}</span>${breadcrumbs(entry.path)}<div class="prompt">${escapeHtml(entry.prompt)}</div><code class="note">${escapeHtml(entry.requestId)}</code></td>
<td class="outcome">${result}</td>
</tr>`
}

/** The arguments an approver changed, as `name: before → after` lines; empty when none changed. */
function changesOf({ args, decision }: HistoryEntry): string {
  const edited = decision.data?.args
  if (!args || typeof edited !== "object" || edited === null) return ""
  const lines = Object.entries(edited as Record<string, unknown>)
    .filter(([name, value]) => args[name] !== value)
    .map(
      ([name, value]) =>
        `<li><code>${escapeHtml(name)}</code> ${escapeHtml(JSON.stringify(args[name]))} → ${escapeHtml(JSON.stringify(value))}</li>`,
    )
  return lines.length === 0 ? "" : `<ul class="changes">${lines.join("")}</ul>`
}
