/** The stylesheet of every page (inline, carrying the CSP nonce). */
export const STYLE = `
:root { --ink: #1d1d1f; --muted: #5f6368; --line: #d9dce1; --bg: #f6f7f9; --card: #fff;
  --ok: #1e7b34; --ok-bg: #e6f4ea; --no: #b3261e; --no-bg: #fce8e6; --accent: #1a56db }
* { box-sizing: border-box }
[hidden] { display: none !important }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: var(--bg); margin: 0 }
main { max-width: 60rem; margin: 0 auto; padding: 0 1rem 3rem }
.top { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1.5rem; padding: .7rem 1.2rem; background: var(--card); border-bottom: 1px solid var(--line) }
.top h1 { font-size: 1.15rem; margin: 0 }
.tabs { display: flex; gap: .3rem; flex: 1 }
.tabs a { color: var(--muted); text-decoration: none; padding: .3rem .7rem; border-radius: 6px }
.tabs a[aria-current="page"] { color: var(--ink); background: var(--bg); font-weight: 600 }
.signout { display: flex; align-items: center; gap: .5rem; color: var(--muted) }
h2 { font-size: 1.05rem; margin: 1.4rem 0 .6rem }
kbd { font: 11px ui-monospace, monospace; border: 1px solid var(--line); border-bottom-width: 2px; border-radius: 4px; padding: 0 .3em; color: var(--muted); background: #fafafa }
button { font: inherit; padding: .3rem .8rem; cursor: pointer; border: 1px solid var(--line); border-radius: 6px; background: #fff }
button:disabled { cursor: wait; opacity: .6 }
button.approve { background: var(--ok-bg); border-color: #a8d5b5 } button.decline { background: var(--no-bg); border-color: #f1b5ae }
.linkish { border: 0; background: none; color: var(--muted); font-size: .8rem; padding: 0 .3rem }
input, textarea, select { font: inherit; padding: .3rem .45rem; border: 1px solid var(--line); border-radius: 6px; background: #fff }
textarea { width: 100% }
label { display: grid; gap: .2rem; font-size: .9rem; color: var(--muted) }
label > span { display: block }
label.check { display: flex; gap: .4rem; align-items: center }
.start { margin: 1rem 0; background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: .5rem .9rem }
.start summary { cursor: pointer; font-weight: 600 }
#start { display: grid; gap: .5rem; margin: .6rem 0 .3rem; justify-items: start }
.cards { display: grid; gap: .7rem }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: .75rem 1rem; outline: none }
.card:focus, .card:focus-within, .card.selected { border-color: var(--accent); box-shadow: 0 0 0 3px #1a56db22 }
.card.expired { border-color: #e0a39e } .card.failed { border-left: 4px solid var(--no) }
.expiring { font-size: .75rem; padding: .05rem .45rem; border-radius: 99px; background: #fde7e4; color: #a50e0e }
.notify-failed { color: var(--no) }
.card header { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem }
.kind { font-size: .75rem; text-transform: uppercase; letter-spacing: .04em; padding: .05rem .45rem; border-radius: 99px; background: #e8eaed; color: #3c4043 }
.kind-approval { background: #fff4d6; color: #7a5200 } .kind-input, .kind-question { background: #e2ecfd; color: #174ea6 }
.kind-authorization { background: #f3e8fd; color: #6a1b9a }
.tool { font-family: ui-monospace, monospace; font-size: .9rem }
.breadcrumbs ol { display: flex; list-style: none; margin: 0; padding: 0; font-size: .85rem; color: var(--muted) }
.breadcrumbs li + li::before { content: "›"; padding: 0 .35rem; color: #9aa0a6 }
.prompt { font-weight: 600; margin: .45rem 0; white-space: pre-wrap; overflow-wrap: anywhere }
.back { margin: 1rem 0 0 }
.args summary { cursor: pointer; color: var(--muted); font-size: .85rem }
.args dl { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: .25rem .8rem; margin: .3rem 0; font-size: .9rem }
.args dt { font-family: ui-monospace, monospace; color: var(--muted) }
.args dd { margin: 0; min-width: 0 }
.args .text { white-space: pre-wrap; overflow-wrap: anywhere }
.args dd pre { margin: 0 }
.args pre, td pre { background: #f8f9fa; border: 1px solid #eceef1; border-radius: 6px; padding: .5rem .7rem; margin: .3rem 0; font-size: .85rem; overflow-x: auto }
.meta { color: var(--muted); font-size: .85rem; margin: .4rem 0 }
.actions { display: flex; gap: .4rem; flex-wrap: wrap; margin-top: .4rem }
.card form { display: grid; gap: .45rem; margin-top: .6rem; padding-top: .6rem; border-top: 1px dashed var(--line); justify-items: start }
.card form label { width: 100% }
small { color: var(--muted) }
abbr.required { color: var(--no); text-decoration: none }
#log { list-style: none; padding: 0; margin: .5rem 0 }
#log li { white-space: pre-wrap; margin: .3rem 0; padding: .45rem .7rem; border-radius: 6px; background: var(--ok-bg) }
#log li.error { background: var(--no-bg); color: var(--no) }
#log li.declined { background: #fdf2e9; color: #8a4b0f; border-left: 4px solid #d97706 }
.card.confirming { border-color: #d97706; box-shadow: 0 0 0 3px #d9770633 }
.error-text { color: var(--no) }
.empty, .note { color: var(--muted) }
.signin { max-width: 24rem; margin: 3rem auto; background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 1rem 1.3rem }
.signin form { display: grid; gap: .5rem }
.filters input { width: 10rem }
.changes { margin: .2rem 0; padding-left: 1rem; font-size: .85rem }
.filters { display: flex; flex-wrap: wrap; gap: .6rem; align-items: end; margin: 1rem 0; background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: .7rem .9rem }
table { width: 100%; border-collapse: collapse; background: var(--card); border: 1px solid var(--line); border-radius: 8px; font-size: .9rem }
th, td { text-align: left; vertical-align: top; padding: .5rem .6rem; border-bottom: 1px solid #eceef1 }
th { color: var(--muted); font-weight: 600; font-size: .8rem; text-transform: uppercase; letter-spacing: .03em }
td .prompt { font-weight: 500; margin: .2rem 0 }
.verdict { font-weight: 600 } .verdict-ok { color: var(--ok) } .verdict-no { color: var(--no) }
.reason { color: var(--muted); font-style: italic }
.status { font-size: .75rem; padding: .05rem .4rem; border-radius: 99px; background: #e8eaed }
.status-done { background: var(--ok-bg); color: var(--ok) } .status-error { background: var(--no-bg); color: var(--no) }
.status-pending { background: #fff4d6; color: #7a5200 }
dialog { border: 1px solid var(--line); border-radius: 10px; padding: 1rem 1.4rem }
.keys { display: grid; grid-template-columns: max-content 1fr; gap: .3rem 1rem }
.keys dd { margin: 0 }
/* A phone (390 px): the header wraps, arguments stack, and history rows become blocks, so
   nothing scrolls sideways and every button stays on screen. */
@media (max-width: 40rem) {
  .top { padding: .6rem .8rem } .tabs { flex: 1 1 auto } main { padding: 0 .6rem 3rem }
  .card { padding: .65rem .75rem } .args dl { grid-template-columns: minmax(0, 1fr) } .args dd { margin-bottom: .3rem }
  #history table, #history tbody, #history tr, #history td { display: block; width: 100% }
  #history thead { display: none }
  #history tr { border-bottom: 1px solid var(--line); padding: .35rem 0 }
  #history td { border: 0; padding: .15rem .6rem; overflow-wrap: anywhere }
  .filters input { width: 100% } .filters label { flex: 1 1 8rem }
}
`
