import { type DeliveryRecord, expiryTime, isExpired, runIdOfEntry } from "@toolnexus/core"
import { type FormField, type RequestDescription, describeRequest } from "../describe-request.js"
import type { FailedInboxEntry, InboxEntry } from "../host-inbox.js"
import { ago, breadcrumbs, escapeHtml, timeTag } from "./html.js"

/** What the inbox section shows. */
export interface InboxInput {
  /** Open requests, one per request id, oldest first. */
  entries: InboxEntry[]
  /** The notification records of `entries` (request id ⇒ record), for those attempted. */
  deliveries?: Map<string, DeliveryRecord>
  /** Requests whose resumes failed too often. */
  failed: FailedInboxEntry[]
  /** Epoch ms that ages and expiries are relative to. */
  now: number
  /** True when the list was cut at the page's limit. */
  truncated?: boolean
}

/** The start-a-run form and the inbox section, the body of `GET /`. */
export function renderInboxBody(input: InboxInput & { team: boolean }): string {
  const team = input.team
    ? `<label class="check"><input type="checkbox" name="team" id="team"> delegate to a team (a lead agent hands the work to a sub-agent)</label>`
    : ""
  return `<details class="start"><summary>Start a run <kbd>n</kbd></summary>
<form id="start">
<label for="prompt">What should the agent do?</label>
<textarea id="prompt" name="prompt" rows="2" required>Refund order A-1001 $25, it arrived damaged.</textarea>
${team}<button type="submit">Start run</button>
</form>
</details>
<ol id="log" aria-live="polite"></ol>
${renderInboxSection(input)}
<dialog id="help" aria-label="keyboard shortcuts"><h2>Keyboard shortcuts</h2>
<dl class="keys"><dt><kbd>j</kbd> / <kbd>k</kbd></dt><dd>next / previous request</dd>
<dt><kbd>a</kbd></dt><dd>approve</dd><dt><kbd>d</kbd></dt><dd>decline with a reason</dd>
<dt><kbd>e</kbd></dt><dd>edit the arguments, then approve</dd><dt><kbd>r</kbd></dt><dd>respond (text or form)</dd>
<dt><kbd>o</kbd></dt><dd>show or hide the arguments</dd><dt><kbd>n</kbd></dt><dd>start a run</dd>
<dt><kbd>i</kbd> / <kbd>h</kbd></dt><dd>inbox / history</dd><dt><kbd>Esc</kbd></dt><dd>close a form</dd>
<dt><kbd>?</kbd></dt><dd>this help</dd></dl>
<form method="dialog"><button>Close</button></form></dialog>`
}

/** The `#inbox` section alone; the page swaps it in when a server-sent event says it changed. */
export function renderInboxSection({ entries, deliveries, failed, now, truncated }: InboxInput): string {
  const cards = entries.map((entry) => renderCard(entry, now, deliveries?.get(entry.request.id))).join("\n")
  const empty = entries.length === 0 ? `<p class="empty">Nothing is waiting.</p>` : ""
  const more = truncated ? `<p class="note">Showing the oldest ${entries.length}.</p>` : ""
  const failedPart =
    failed.length === 0
      ? ""
      : `<h2>Failed (${failed.length})</h2>
<p class="note">The decision was made, but resuming the run failed every time it was tried.</p>
<div class="cards">${failed.map((entry) => renderFailedCard(entry, now)).join("\n")}</div>`
  return `<section id="inbox" data-count="${entries.length}">
<h2>Waiting for an answer (${entries.length}) <button type="button" class="linkish" data-action="help">shortcuts <kbd>?</kbd></button></h2>
${empty}<div class="cards">
${cards}
</div>${more}
${failedPart}
</section>`
}

/** One open request as a card with its actions (the inbox lists them; `/requests/:id` shows one). */
export function renderCard(entry: InboxEntry, now: number, delivery?: DeliveryRecord): string {
  const { request } = entry
  const described = describeRequest(request)
  // Core's rule decides; an unreadable deadline (expiry time 0) counts as past, as it does
  // for an approval.
  const expired = isExpired(request, now)
  const expires = expiryTime(request)
  const expiry =
    expires === undefined
      ? "no expiry"
      : expires === 0
        ? "unreadable deadline, treated as expired"
        : expired
          ? `expired ${ago(now - expires)} ago`
          : `expires in ${ago(expires - now)}`
  return `<article class="card${expired ? " expired" : ""}" tabindex="0" data-request-id="${escapeHtml(request.id)}" data-mode="${described.mode}" aria-label="${escapeHtml(`${request.kind}: ${request.prompt}`)}">
<header><span class="kind kind-${escapeHtml(request.kind.replace(/[^a-z_]/gi, ""))}">${escapeHtml(request.kind)}</span>${described.tool ? ` <strong class="tool">${escapeHtml(described.tool)}</strong>` : ""}${breadcrumbs(entry.path ?? described.path)}${delivery?.expiring && !expired ? ` <span class="expiring" title="warned ${escapeHtml(delivery.expiring.warnedAt)}">expires soon</span>` : ""}</header>
<p class="prompt">${escapeHtml(request.prompt)}</p>
${renderArgs(described.args)}${renderLink(request.url)}<p class="meta">waiting ${timeTag(entry.since, ago(now - Date.parse(entry.since)))} · <span class="expiry">${request.expiresAt ? timeTag(request.expiresAt, expiry) : expiry}</span> · run <code>${escapeHtml(runIdOfEntry(entry))}</code>${entry.state === "claimed" ? ` · <span class="claimed">being resumed</span>` : ""}${renderDelivery(delivery, now)} · <a class="permalink" href="/requests/${escapeHtml(encodeURIComponent(request.id))}">link</a></p>
${expired ? renderExpiredActions() : renderActions(described)}
</article>`
}

/** Where the request's notification stands: sent, or failing (attempts, last error, next try). */
function renderDelivery(delivery: DeliveryRecord | undefined, now: number): string {
  if (!delivery || delivery.attempts === 0) return ""
  const tries = `${delivery.attempts} attempt${delivery.attempts === 1 ? "" : "s"}`
  if (delivery.deliveredAt !== undefined)
    return ` · <span class="notified">notified ${timeTag(delivery.deliveredAt, `${ago(now - Date.parse(delivery.deliveredAt))} ago`)} (${tries})</span>`
  const next =
    delivery.nextAttemptAt !== undefined
      ? `, next ${timeTag(delivery.nextAttemptAt, `in ${ago(Math.max(0, Date.parse(delivery.nextAttemptAt) - now))}`)}`
      : ""
  const why = delivery.lastError !== undefined ? `: ${escapeHtml(delivery.lastError)}` : ""
  return ` · <span class="notify-failed">notification not delivered (${tries}${why}${next})</span>`
}

function renderArgs(args: Record<string, unknown> | undefined): string {
  if (!args) return ""
  const entries = Object.entries(args)
  const items = entries.map(([name, value]) => `<dt>${escapeHtml(name)}</dt><dd>${renderValue(value)}</dd>`)
  return `<details class="args" open><summary>Arguments (${entries.length}) <kbd>o</kbd></summary><dl>${items.join("")}</dl></details>\n`
}

/**
 * One argument's value: a string as the text it is (its line breaks shown as line breaks,
 * not as `\n`), anything else as JSON. Escaped either way.
 */
function renderValue(value: unknown): string {
  if (typeof value === "string") return `<span class="text">${escapeHtml(value)}</span>`
  if (typeof value === "object" && value !== null)
    return `<pre>${escapeHtml(JSON.stringify(value, null, 2))}</pre>`
  return `<code>${escapeHtml(JSON.stringify(value))}</code>`
}

function renderLink(url: string | undefined): string {
  if (url === undefined) return ""
  // Only web links become clickable; a `javascript:` URL from a tool stays text.
  if (!/^https?:\/\//i.test(url)) return `<p class="link">${escapeHtml(url)}</p>\n`
  return `<p class="link"><a href="${escapeHtml(url)}" target="_blank" rel="noreferrer noopener">${escapeHtml(url)}</a></p>\n`
}

function renderExpiredActions(): string {
  // An approval would be refused (410); the request can only be closed.
  return `<div class="actions"><button type="button" data-action="expire">Close as expired</button></div>`
}

function renderActions(described: RequestDescription): string {
  const decline = `<button type="button" class="decline" data-action="decline-open">Decline <kbd>d</kbd></button>`
  const declineForm = `<form class="decline-form" data-form="decline" hidden>
<label><span>Reason</span> <input name="reason" maxlength="500" placeholder="declined" autocomplete="off"></label>
<div class="actions"><button type="submit" class="decline">Decline</button> <button type="button" data-action="cancel">Cancel</button></div>
</form>`
  let primary = ""
  let extra = ""
  if (described.mode === "approve") {
    primary = `<button type="button" class="approve" data-action="approve">Approve <kbd>a</kbd></button>`
    if (described.editable.length > 0 && described.args) {
      primary += ` <button type="button" data-action="edit-open">Edit, then approve <kbd>e</kbd></button>`
      extra = renderEditForm(described.editable, described.args)
    }
  } else if (described.mode === "authorize") {
    primary = `<button type="button" class="approve" data-action="approve">I have signed in <kbd>a</kbd></button>`
  } else if (described.mode === "form" && described.schema) {
    primary = `<button type="button" class="approve" data-action="respond-open">Fill in <kbd>r</kbd></button>`
    extra = renderSchemaForm(described.schema.properties, described.schema.required)
  } else {
    primary = `<button type="button" class="approve" data-action="respond-open">Respond <kbd>r</kbd></button>`
    extra = `<form class="respond-form" data-form="respond" hidden>
<label><span>Your answer</span> <textarea name="text" rows="3" maxlength="20000" required></textarea></label>
<div class="actions"><button type="submit" class="approve">Send</button> <button type="button" data-action="cancel">Cancel</button></div>
</form>`
  }
  return `<div class="actions">${primary} ${decline}</div>\n${declineForm}\n${extra}`
}

function renderEditForm(editable: string[], args: Record<string, unknown>): string {
  const fields = editable
    .map((name) => {
      const value = args[name]
      const type = typeof value === "number" ? "number" : typeof value === "boolean" ? "boolean" : "string"
      return fieldHtml(name, { type }, value, false)
    })
    .join("\n")
  return `<form class="edit-form" data-form="edit" hidden>
${fields}
<div class="actions"><button type="submit" class="approve">Approve with these arguments</button> <button type="button" data-action="cancel">Cancel</button></div>
</form>`
}

function renderSchemaForm(properties: Record<string, FormField>, required: string[]): string {
  const fields = Object.entries(properties)
    .map(([name, field]) => fieldHtml(name, field, field.default, required.includes(name)))
    .join("\n")
  return `<form class="respond-form" data-form="fill" hidden>
${fields}
<div class="actions"><button type="submit" class="approve">Submit</button> <button type="button" data-action="cancel">Cancel</button></div>
</form>`
}

/** One labelled input; `data-type` tells the page's script how to read the value back. */
function fieldHtml(name: string, field: FormField, value: unknown, required: boolean): string {
  const label =
    escapeHtml(field.title ?? name) + (required ? ' <abbr class="required" title="required">*</abbr>' : "")
  const hint = field.description ? `<small>${escapeHtml(field.description)}</small>` : ""
  const common = `name="${escapeHtml(name)}" data-type="${field.type}"${required ? " required" : ""}`
  if (field.type === "boolean") {
    return `<label class="check"><input type="checkbox" ${common}${value === true ? " checked" : ""}> ${label}</label>${hint}`
  }
  if (field.enum) {
    const options = field.enum
      .map((option) => `<option${option === value ? " selected" : ""}>${escapeHtml(option)}</option>`)
      .join("")
    return `<label><span>${label}</span> <select ${common}>${required ? "" : "<option></option>"}${options}</select></label>${hint}`
  }
  const shown = value === undefined || value === null ? "" : String(value)
  if (field.type === "string" && (shown.length > 60 || shown.includes("\n"))) {
    return `<label><span>${label}</span> <textarea ${common} rows="4">${escapeHtml(shown)}</textarea></label>${hint}`
  }
  const bounds = [
    field.minimum !== undefined ? ` min="${field.minimum}"` : "",
    field.maximum !== undefined ? ` max="${field.maximum}"` : "",
    field.maxLength !== undefined ? ` maxlength="${field.maxLength}"` : "",
  ].join("")
  const type =
    field.type === "number" || field.type === "integer"
      ? "number"
      : field.format === "email"
        ? "email"
        : "text"
  const step = field.type === "number" ? ' step="any"' : field.type === "integer" ? ' step="1"' : ""
  return `<label><span>${label}</span> <input type="${type}"${step}${bounds} ${common} value="${escapeHtml(shown)}" autocomplete="off"></label>${hint}`
}

function renderFailedCard(entry: FailedInboxEntry, now: number): string {
  const { request, lastError } = entry
  const described = describeRequest(request)
  return `<article class="card failed" tabindex="0" data-failed-id="${escapeHtml(request.id)}">
<header><span class="kind">${escapeHtml(request.kind)}</span>${described.tool ? ` <strong class="tool">${escapeHtml(described.tool)}</strong>` : ""}${breadcrumbs(entry.path ?? described.path)}</header>
<p class="prompt">${escapeHtml(request.prompt)}</p>
<p class="error-text"><strong>${escapeHtml(lastError.code ?? lastError.name)}</strong>: ${escapeHtml(lastError.message)}</p>
<p class="meta">${entry.attempts} attempts · waiting ${timeTag(entry.since, ago(now - Date.parse(entry.since)))} · run <code>${escapeHtml(runIdOfEntry(entry))}</code></p>
<div class="actions"><button type="button" data-action="retry">Retry with the stored decision</button></div>
</article>`
}
