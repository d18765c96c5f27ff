import type { PendingEntry } from "@toolnexus/durable"

/** What {@link renderPage} shows. */
export interface PageInput {
  /** The pending requests, oldest first, as `listPending` returns them. */
  entries: PendingEntry[]
  /** Epoch ms the ages and expiries are relative to. */
  now: number
  /** The CSP nonce that lets the page's own inline script and style run, and nothing else. */
  nonce: string
  /** True when the list was cut at the page's limit. */
  truncated?: boolean
}

/** Escapes text for HTML element content and double- or single-quoted attribute values. */
export function escapeHtml(value: unknown): string {
  return String(value)
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&#39;")
}

/**
 * The approvals page: a form that starts a run, the pending requests with Approve / Decline
 * buttons, and a log of what answering did. Every prompt, id and data value comes from a
 * model or a user and is escaped; the script builds its own output with `textContent`.
 */
export function renderPage(input: PageInput): string {
  const { nonce } = input
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Approvals · toolnexus</title>
<style nonce="${escapeHtml(nonce)}">${STYLE}</style>
</head>
<body>
<header><h1>Approvals</h1><p>Agent runs that wait for a human. Answering one resumes its run.</p></header>
<noscript><p class="error">The buttons need JavaScript; the JSON API works without it.</p></noscript>
<form id="start">
<label for="prompt">Start a run</label>
<textarea id="prompt" name="prompt" rows="2" required>Refund order A-1001 $25, it arrived damaged.</textarea>
<button type="submit">Start run</button>
</form>
<h2>Results</h2>
<ol id="log" aria-live="polite"></ol>
${renderPendingSection(input)}
<script nonce="${escapeHtml(nonce)}">${SCRIPT}</script>
</body>
</html>
`
}

/** The `#pending` section alone; the page's script swaps it in after every change. */
export function renderPendingSection({ entries, now, truncated }: Omit<PageInput, "nonce">): string {
  const rows = entries.map((entry) => renderEntry(entry, now)).join("\n")
  const empty = entries.length === 0 ? `<p class="empty">Nothing is waiting.</p>` : ""
  const more = truncated ? `<p class="note">Showing the oldest ${entries.length}.</p>` : ""
  return `<section id="pending">
<h2>Waiting for an answer (${entries.length})</h2>
${empty}<ul class="requests">
${rows}
</ul>${more}
</section>`
}

function renderEntry({ conversationId: id, request, since }: PendingEntry, now: number): string {
  const expires = request.expiresAt === undefined ? Number.NaN : Date.parse(request.expiresAt)
  const expired = Number.isFinite(expires) && expires < now
  const expiry = !Number.isFinite(expires)
    ? "no expiry"
    : expired
      ? `expired ${ago(now - expires)} ago`
      : `expires in ${ago(expires - now)}`
  // An expired request can only be closed; an approval would be refused (422).
  const buttons = expired
    ? `<button type="button" data-answer="expire">Close as expired</button>`
    : `<button type="button" class="approve" data-answer="approve">Approve</button>
<button type="button" class="decline" data-answer="decline">Decline</button>`
  return `<li class="request${expired ? " expired" : ""}" data-request-id="${escapeHtml(request.id)}">
<p class="prompt">${escapeHtml(request.prompt)}</p>
<p class="meta"><span class="kind">${escapeHtml(request.kind)}</span>
· waiting ${timeTag(since, ago(now - Date.parse(since)))}
· <span class="expiry">${request.expiresAt ? timeTag(request.expiresAt, expiry) : expiry}</span>
· run <code>${escapeHtml(id)}</code></p>
${renderDetails(request.data)}${renderLink(request.url)}
<p class="actions">${buttons}</p>
</li>`
}

function renderDetails(data: Record<string, unknown> | undefined): string {
  // callId is the loop's bookkeeping, not something the approver decides on.
  const entries = Object.entries(data ?? {}).filter(([key]) => key !== "callId")
  if (entries.length === 0) return ""
  const rows = entries
    .map(([key, value]) => {
      const text = typeof value === "string" ? value : JSON.stringify(value)
      return `<dt>${escapeHtml(key)}</dt><dd>${escapeHtml(text)}</dd>`
    })
    .join("")
  return `<dl class="details">${rows}</dl>\n`
}

function renderLink(url: string | undefined): string {
  if (url === undefined) return ""
  // Only web links become clickable; a `javascript:` URL from a tool stays text.
  if (!/^https?:\/\//i.test(url)) return `<p class="link">${escapeHtml(url)}</p>\n`
  return `<p class="link"><a href="${escapeHtml(url)}" rel="noreferrer noopener">${escapeHtml(url)}</a></p>\n`
}

function timeTag(iso: string, label: string): string {
  return `<time datetime="${escapeHtml(iso)}" title="${escapeHtml(iso)}">${escapeHtml(label)}</time>`
}

/** A short human duration: "12 s", "3 min", "5 h", "2 d". */
export function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000))
  if (s < 60) return `${s} s`
  if (s < 3600) return `${Math.floor(s / 60)} min`
  if (s < 48 * 3600) return `${Math.floor(s / 3600)} h`
  return `${Math.floor(s / 86400)} d`
}

const STYLE = `
body { font: 15px/1.45 system-ui, sans-serif; color: #1d1d1f }
body { max-width: 52rem; margin: 2rem auto; padding: 0 1rem }
h1 { margin-bottom: 0 } header p { margin-top: .25rem; color: #555 }
form { display: grid; gap: .4rem; margin: 1rem 0 }
textarea { font: inherit; padding: .4rem }
button { font: inherit; padding: .3rem .9rem; cursor: pointer; justify-self: start }
button:disabled { cursor: wait; opacity: .6 }
.requests { list-style: none; padding: 0 }
.request { border: 1px solid #ccc; border-radius: 6px; padding: .6rem .9rem; margin: .6rem 0 }
.request.expired { border-color: #c77 }
.prompt { font-weight: 600; margin: 0 0 .3rem; white-space: pre-wrap }
.meta { color: #555; font-size: .9em; margin: 0 }
.details { display: grid; grid-template-columns: max-content 1fr; gap: .1rem .8rem; font-size: .9em }
.details dt { color: #555 } .details dd { margin: 0; white-space: pre-wrap }
.approve { background: #e3f5e6 } .decline { background: #fbe4e4 }
#log li { white-space: pre-wrap; margin: .3rem 0 } #log .error, .error { color: #a00 }
.empty, .note { color: #555 }
`

// Plain browser JS, no build step. Output goes through textContent only.
const SCRIPT = `
const log = document.getElementById("log")
function say(text, isError) {
  const li = document.createElement("li")
  li.textContent = text
  if (isError) li.className = "error"
  log.prepend(li)
}
function describe(run) {
  if (run.status === "pending") return "Run " + run.id + " waits for: " + run.pending.prompt
  if (run.status === "done") return "Run " + run.id + " finished: " + run.text
  return "Run " + run.id + " stopped (" + run.status + (run.limit ? ", " + run.limit : "") + "): " + run.text
}
async function call(url, body) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify(body),
  })
  const json = await res.json().catch(() => ({ error: { message: "HTTP " + res.status } }))
  if (!res.ok) throw new Error((json.error && json.error.message) || "HTTP " + res.status)
  return json
}
// Only the list is fetched: parsing a whole page would re-parse its style and script, whose
// nonce is not this page's, and the browser would report CSP violations for them.
async function refresh() {
  const res = await fetch("/partials/pending")
  if (!res.ok) return
  const template = document.createElement("template")
  template.innerHTML = await res.text()
  const fresh = template.content.getElementById("pending")
  if (fresh) document.getElementById("pending").replaceWith(fresh)
}
document.getElementById("start").addEventListener("submit", async (event) => {
  event.preventDefault()
  const button = event.target.querySelector("button")
  button.disabled = true
  try {
    say(describe(await call("/runs", { prompt: event.target.prompt.value })))
  } catch (error) {
    say("Could not start the run: " + error.message, true)
  } finally {
    button.disabled = false
    await refresh()
  }
})
document.addEventListener("click", async (event) => {
  const button = event.target.closest("button[data-answer]")
  if (!button) return
  const row = button.closest("[data-request-id]")
  const id = row.dataset.requestId
  const choice = button.dataset.answer
  const body = choice === "approve"
    ? { ok: true }
    : { ok: false, reason: choice === "expire" ? "expired" : "declined" }
  for (const b of row.querySelectorAll("button")) b.disabled = true
  try {
    const run = await call("/requests/" + encodeURIComponent(id) + "/answer", body)
    say((body.ok ? "Approved. " : "Declined. ") + describe(run))
  } catch (error) {
    say("Could not answer: " + error.message, true)
  } finally {
    await refresh()
  }
})
`
