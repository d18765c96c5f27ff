import type { DeliveryRecord } from "@toolnexus/core"
import type { InboxEntry } from "../host-inbox.js"
import { escapeHtml } from "./html.js"
import { renderCard } from "./inbox-view.js"

/** The body of `GET /requests/:id` in a browser: the one request's card, answerable there. */
export function renderRequestBody(entry: InboxEntry, now: number, delivery?: DeliveryRecord): string {
  return `<p class="back"><a href="/">← Inbox</a></p>
<ol id="log" aria-live="polite"></ol>
<section id="request" class="cards">
${renderCard(entry, now, delivery)}
</section>`
}

/** The body of the 404 page for a request no run waits on (answered, expired or never there). */
export function renderUnknownRequestBody(id: string): string {
  return `<p class="back"><a href="/">← Inbox</a></p>
<section id="request"><h2>No such request</h2>
<p class="empty">No run waits on request <code>${escapeHtml(id)}</code>: it was answered already, or it never existed. The <a href="/history">history</a> lists the answered ones.</p></section>`
}
