// The pages' script: plain browser JS, no build step, run under a CSP nonce. Everything it
// shows goes through textContent; HTML comes only from the server's escaped partials.
export const SCRIPT = `
const csrf = document.querySelector('meta[name="csrf-token"]')?.content ?? ""
const log = document.getElementById("log")
function say(text, isError, kind) {
  if (!log) return
  const li = document.createElement("li")
  li.textContent = text
  // A decline is not a success: it gets its own colour, like an error but not one.
  if (isError) li.className = "error"
  else if (kind) li.className = kind
  log.prepend(li)
  while (log.children.length > 5) log.lastElementChild.remove()
}
function describe(run) {
  if (run.status === "pending") return "Run " + run.id + " now waits for: " + run.pending.prompt
  if (run.status === "done") return "Run " + run.id + " finished: " + run.text
  return "Run " + run.id + " stopped (" + run.status + (run.limit ? ", " + run.limit : "") + "): " + run.text
}
async function call(url, body) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json", "x-csrf-token": csrf },
    body: JSON.stringify(body),
  })
  const json = await res.json().catch(() => ({ error: { message: "HTTP " + res.status } }))
  if (!res.ok) throw new Error((json.error && json.error.message) || "HTTP " + res.status)
  return json
}
// Only a section is fetched: parsing a whole page would re-parse its style and script, whose
// nonce is not this page's, and the browser would report CSP violations for them.
async function fetchSection(url, id) {
  const res = await fetch(url, { headers: { accept: "text/html" } })
  if (!res.ok) return undefined
  const template = document.createElement("template")
  template.innerHTML = await res.text()
  return template.content.getElementById(id)
}
let refreshing = Promise.resolve()
function refreshInbox() {
  refreshing = refreshing.then(async () => {
    const current = document.getElementById("inbox")
    if (!current) return
    const fresh = await fetchSection("/partials/inbox", "inbox")
    if (!fresh) return
    const selected = document.querySelector(".card.selected")?.dataset.requestId
    // Moving the card out of the document below blurs its field: the rest of what the user
    // types would land on the page as shortcuts (an "a" in a reason would approve).
    const typing = document.activeElement?.closest?.(".card.editing") ? document.activeElement : undefined
    const caret = typing && "selectionStart" in typing ? [typing.selectionStart, typing.selectionEnd] : undefined
    // A card someone is typing in stays as it is; only the others are replaced.
    for (const card of fresh.querySelectorAll(".card[data-request-id]")) {
      const old = current.querySelector('.card.editing[data-request-id="' + CSS.escape(card.dataset.requestId) + '"]')
      if (old) card.replaceWith(old)
    }
    current.replaceWith(fresh)
    if (selected) select(fresh.querySelector('.card[data-request-id="' + CSS.escape(selected) + '"]'), false)
    if (typing?.isConnected) {
      typing.focus()
      if (caret && caret[0] !== null) typing.setSelectionRange(caret[0], caret[1])
    }
  }).catch(() => {})
  return refreshing
}
async function refreshHistory() {
  if (!document.getElementById("history")) return
  const fresh = await fetchSection("/partials/history" + location.search, "history")
  if (fresh) document.getElementById("history").replaceWith(fresh)
}
function cards() { return [...document.querySelectorAll(".card")] }
function select(card, focus = true) {
  unconfirm()
  for (const c of document.querySelectorAll(".card.selected")) c.classList.remove("selected")
  if (!card) return
  card.classList.add("selected")
  if (focus) card.focus()
}
// Only a card the page shows as selected (focused or marked): a key never acts on a card the
// user has not picked, so none is acted on right after the page loads.
function selectedCard() {
  return document.activeElement?.closest?.(".card") ?? document.querySelector(".card.selected") ?? undefined
}
// An approval by keyboard takes a second press of a on the same card: the first marks it.
function unconfirm() {
  for (const c of document.querySelectorAll(".card.confirming")) c.classList.remove("confirming")
}
function openForm(card, name) {
  closeForms(card)
  const form = card.querySelector('form[data-form="' + name + '"]') ?? (name === "respond" ? card.querySelector('form[data-form="fill"]') : null)
  if (!form) return false
  form.hidden = false
  card.classList.add("editing")
  form.querySelector("input:not([type=hidden]), textarea, select")?.focus()
  return true
}
function closeForms(card) {
  for (const form of card.querySelectorAll("form[data-form]")) form.hidden = true
  card.classList.remove("editing")
}
function valuesOf(form) {
  const values = {}
  for (const el of form.querySelectorAll("[name]")) {
    const type = el.dataset.type
    if (type === "boolean") values[el.name] = el.checked
    else if ((type === "number" || type === "integer") && el.value.trim() !== "") values[el.name] = Number(el.value)
    else if (el.value !== "" || el.required) values[el.name] = el.value
  }
  return values
}
async function answer(card, body, verb) {
  const id = card.dataset.requestId
  for (const b of card.querySelectorAll("button")) b.disabled = true
  try {
    const run = await call("/requests/" + encodeURIComponent(id) + "/answer", body)
    say(verb + " " + describe(run), false, body.ok === false ? "declined" : undefined)
    card.classList.remove("editing")
    // A request's own page has no inbox to refresh: the answered card goes.
    if (!document.getElementById("inbox")) card.remove()
  } catch (error) {
    say("Could not answer: " + error.message, true)
    for (const b of card.querySelectorAll("button")) b.disabled = false
    return
  }
  await refreshInbox()
}
const ACTIONS = {
  approve: (card) => answer(card, { ok: true }, "Approved."),
  expire: (card) => answer(card, { ok: false, reason: "expired" }, "Closed as expired."),
  "decline-open": (card) => openForm(card, "decline"),
  "edit-open": (card) => openForm(card, "edit"),
  "respond-open": (card) => openForm(card, "respond"),
  cancel: (card) => { closeForms(card); card.focus() },
  retry: async (card) => {
    const id = card.dataset.failedId
    try {
      say("Retried. " + describe(await call("/requests/" + encodeURIComponent(id) + "/retry", {})))
    } catch (error) {
      say("Could not retry: " + error.message, true)
    }
    await refreshInbox()
  },
}
document.addEventListener("click", (event) => {
  const button = event.target.closest("button[data-action]")
  if (!button) {
    const card = event.target.closest(".card")
    if (card) select(card, false)
    return
  }
  if (button.dataset.action === "help") return document.getElementById("help")?.showModal()
  const card = button.closest(".card")
  if (card) { select(card, false); ACTIONS[button.dataset.action]?.(card) }
})
document.addEventListener("submit", async (event) => {
  const form = event.target
  if (form.id === "start") {
    event.preventDefault()
    const button = form.querySelector("button")
    button.disabled = true
    try {
      say(describe(await call("/runs", { prompt: form.prompt.value, team: form.team ? form.team.checked : false })))
    } catch (error) {
      say("Could not start the run: " + error.message, true)
    } finally {
      button.disabled = false
      await refreshInbox()
    }
    return
  }
  const card = form.closest(".card")
  if (!card || !form.dataset.form) return
  event.preventDefault()
  const values = valuesOf(form)
  if (form.dataset.form === "decline") {
    const reason = (values.reason ?? "").trim() || "declined"
    return answer(card, { ok: false, reason }, "Declined.")
  }
  if (form.dataset.form === "edit") return answer(card, { ok: true, data: { args: values } }, "Approved with changes.")
  if (form.dataset.form === "respond") return answer(card, { ok: true, data: { text: values.text } }, "Responded.")
  return answer(card, { ok: true, data: values }, "Submitted.")
})
function typing(target) {
  return target instanceof HTMLElement && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))
}
document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey) return
  if (event.key === "Escape") {
    unconfirm()
    const start = document.querySelector("details.start[open]")
    if (start && (start.contains(event.target) || !event.target.closest?.(".card"))) {
      start.open = false
      return
    }
    const card = event.target.closest?.(".card")
    if (card) { closeForms(card); card.focus() }
    return
  }
  if (typing(event.target) || document.querySelector("dialog[open]")) return
  const key = event.key
  if (key === "?") return document.getElementById("help")?.showModal()
  if (key === "i") return void (location.href = "/")
  if (key === "h") return void (location.href = "/history")
  if (key === "/") {
    const search = document.getElementById("search")
    if (search) { event.preventDefault(); search.focus() }
    return
  }
  if (key === "n") {
    const start = document.querySelector("details.start")
    if (start) { event.preventDefault(); start.open = true; document.getElementById("prompt").focus() }
    return
  }
  const all = cards()
  if (all.length === 0) return
  if (key === "j" || key === "k" || key === "ArrowDown" || key === "ArrowUp") {
    event.preventDefault()
    const at = all.indexOf(selectedCard())
    const step = key === "j" || key === "ArrowDown" ? 1 : -1
    return select(all[Math.min(all.length - 1, Math.max(0, at + step))])
  }
  const card = selectedCard()
  if (!card) return
  const byKey = { a: "approve", d: "decline-open", e: "edit-open", r: "respond-open" }
  if (key === "o") { const details = card.querySelector("details.args"); if (details) details.open = !details.open; return }
  const action = byKey[key]
  if (!action || !card.querySelector('[data-action="' + action + '"]')) return
  event.preventDefault()
  if (action === "approve" && !card.classList.contains("confirming")) {
    unconfirm()
    card.classList.add("confirming")
    return say("Press a again to approve: " + (card.querySelector(".prompt")?.textContent ?? "this request") + " (Esc cancels)")
  }
  unconfirm()
  ACTIONS[action](card)
})
if (document.getElementById("inbox") || document.getElementById("history")) {
  const events = new EventSource("/events")
  events.addEventListener("inbox", () => void refreshInbox())
  events.addEventListener("history", () => void refreshHistory())
}
`
