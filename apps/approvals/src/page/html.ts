/** Escapes text for HTML element content and double- or single-quoted attribute values. */
export function escapeHtml(value: unknown): string {
  return String(value)
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&#39;")
}

/** A short human duration: "12 s", "3 min", "5 h", "2 d". */
export function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000))
  if (s < 60) return `${s} s`
  if (s < 3600) return `${Math.floor(s / 60)} min`
  if (s < 48 * 3600) return `${Math.floor(s / 3600)} h`
  return `${Math.floor(s / 86400)} d`
}

/** A `<time>` element showing `label`, with the exact time as its tooltip. */
export function timeTag(iso: string, label: string): string {
  return `<time datetime="${escapeHtml(iso)}" title="${escapeHtml(iso)}">${escapeHtml(label)}</time>`
}

/** An agent path as breadcrumbs (`root › lead.1 › payments.1`); empty for a plain run. */
export function breadcrumbs(path: string[] | undefined): string {
  if (!path || path.length === 0) return ""
  const items = path.map((step) => `<li>${escapeHtml(step)}</li>`).join("")
  return `<nav class="breadcrumbs" aria-label="agent path"><ol>${items}</ol></nav>`
}

/** What every page of the app shares: the CSP nonce, the signed-in user and the CSRF token. */
export interface ShellInput {
  nonce: string
  title: string
  /** The signed-in user; absent on the sign-in page. */
  user?: string
  csrf?: string
  /** Which tab is current. */
  current?: "inbox" | "history"
  body: string
  style: string
  script?: string
}

/** The HTML document around a page: header, navigation, sign-out, and the nonce-carrying style and script. */
export function renderShell(input: ShellInput): string {
  const { nonce, user, csrf, current } = input
  const tab = (name: "inbox" | "history", href: string, label: string, key: string) =>
    `<a href="${href}"${current === name ? ' aria-current="page"' : ""}>${label} <kbd>${key}</kbd></a>`
  const nav =
    user === undefined
      ? ""
      : `<nav class="tabs" aria-label="views">${tab("inbox", "/", "Inbox", "i")}${tab("history", "/history", "History", "h")}</nav>
<form class="signout" method="post" action="/signout"><input type="hidden" name="csrf" value="${escapeHtml(csrf)}"><span class="user">${escapeHtml(user)}</span> <button type="submit">Sign out</button></form>`
  const script = input.script ? `\n<script nonce="${escapeHtml(nonce)}">${input.script}</script>` : ""
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
${csrf ? `<meta name="csrf-token" content="${escapeHtml(csrf)}">\n` : ""}<title>${escapeHtml(input.title)} · toolnexus approvals</title>
<style nonce="${escapeHtml(nonce)}">${input.style}</style>
</head>
<body>
<header class="top"><h1>Approvals</h1>${nav}</header>
<main>
${input.body}
</main>${script}
</body>
</html>
`
}
