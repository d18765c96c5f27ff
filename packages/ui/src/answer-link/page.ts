import type { AnswerDecision, Request } from "@toolnexus/core"

/** Longest JSON of a call's arguments shown on the page; the rest is cut with a note. */
const MAX_ARGS_CHARS = 20_000

/** @internal `text` safe in HTML text and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&#39;")
}

/** @internal A whole small page: `title` as its heading, `body` (already escaped HTML) below. */
export function htmlPage(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>${escapeHtml(title)}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem}
pre{background:#f4f4f4;padding:.75rem;overflow:auto;white-space:pre-wrap}dt{font-weight:600}
button{font:inherit;padding:.4rem 1.2rem;margin-right:.5rem}input{font:inherit;width:100%;box-sizing:border-box}</style>
</head><body><h1>${escapeHtml(title)}</h1>
${body}
</body></html>
`
}

/**
 * @internal The confirm page of an open request: its prompt, kind, tool and arguments, and a
 * form that posts the decision back to `action` (the link's own query, so the token rides along).
 */
export function confirmPage(request: Request, action: string, linkExpiresAt: number): string {
  const data = request.data ?? {}
  const rows: string[] = [`<dt>Kind</dt><dd>${escapeHtml(request.kind)}</dd>`]
  if (typeof data.tool === "string") rows.push(`<dt>Tool</dt><dd><code>${escapeHtml(data.tool)}</code></dd>`)
  if (data.args !== undefined) {
    let args = JSON.stringify(data.args, null, 2) ?? ""
    if (args.length > MAX_ARGS_CHARS) args = `${args.slice(0, MAX_ARGS_CHARS)}\n… (cut)`
    rows.push(`<dt>Arguments</dt><dd><pre>${escapeHtml(args)}</pre></dd>`)
  }
  if (request.expiresAt !== undefined)
    rows.push(`<dt>Request expires</dt><dd>${escapeHtml(request.expiresAt)}</dd>`)
  rows.push(`<dt>Link expires</dt><dd>${escapeHtml(new Date(linkExpiresAt).toISOString())}</dd>`)
  return htmlPage(
    "Approve this request?",
    `<p>${escapeHtml(request.prompt)}</p>
<dl>${rows.join("")}</dl>
<form method="post" action="${escapeHtml(action)}">
<p><label>Reason (if you decline)<br><input name="reason" maxlength="1000"></label></p>
<p><button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="decline">Decline</button></p>
</form>`,
  )
}

/** @internal How a decision reads on a page: `approved`, or `declined` with its reason. */
export function decisionText(decision: AnswerDecision): string {
  if (decision.ok) return "approved"
  return decision.reason ? `declined (${decision.reason})` : "declined"
}
