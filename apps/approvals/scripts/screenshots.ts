/**
 * Takes the two screenshots of the README (docs/inbox.png, docs/history.png): an approvals
 * service with the scripted model on a throwaway SQLite file, a few runs parked and a few
 * answered, photographed in headless Chromium after signing in through the form.
 *
 *   pnpm --filter @toolnexus/app-approvals screenshots   # CHROMIUM=/path/to/chromium to override
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { SqliteStore } from "@toolnexus/durable/sqlite"
import { chromium } from "playwright-core"
import { createApprovalsApp } from "../src/app.js"
import { createModel } from "../src/model.js"
import { signBody } from "../src/security/webhook-signature.js"
import { listen } from "../src/server.js"
import { createTeam } from "../src/team.js"
import { createApprovalToolkit, createApprovalTools } from "../src/tools.js"

const SIGN_IN = "screenshot-sign-in-token-0123456789"
const TOKENS = { "ops-bot": "screenshot-ops-bot-token-0123456789", sam: "screenshot-sam-token-0123456789" }
const WEBHOOK_SECRET = "screenshot-webhook-secret-0123456789"
const out = (name: string) => fileURLToPath(new URL(`../docs/${name}`, import.meta.url))

const dir = mkdtempSync(join(tmpdir(), "tnx-approvals-shots-"))
const store = new SqliteStore({ path: join(dir, "approvals.db") })
const model = createModel({ store }, {})
const toolkit = await createApprovalToolkit()
const app = createApprovalsApp({
  store,
  client: model.client,
  toolkit,
  team: createTeam({ tools: createApprovalTools(), model: model.team }),
  security: { users: { ada: SIGN_IN }, apiTokens: TOKENS, webhookSecret: WEBHOOK_SECRET },
})
const server = await listen(app, { port: 0, hostname: "127.0.0.1" })

async function call(path: string, body: unknown, as: keyof typeof TOKENS = "ops-bot"): Promise<any> {
  const res = await fetch(server.url + path, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${TOKENS[as]}` },
    body: JSON.stringify(body),
  })
  return res.json()
}
const start = (prompt: string, team = false) => call("/runs", { prompt, team })

try {
  // The history: three decisions, by two people and a signed webhook.
  const approved = await start("Refund order A-0950 $18, the parcel never arrived.")
  await call(
    `/requests/${approved.pending.id}/answer`,
    { ok: true, data: { args: { amountUsd: 15 } } },
    "sam",
  )
  const declined = await start("Refund order A-0977 $240, customer changed their mind.")
  await call(
    `/requests/${declined.pending.id}/answer`,
    { ok: false, reason: "outside the 30-day window" },
    "sam",
  )
  const hooked = await start("Refund order A-0981 $9 and email lee@example.com", true)
  const body = JSON.stringify({ id: hooked.pending.id, ok: true })
  await fetch(`${server.url}/webhooks/answer`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-toolnexus-signature": signBody(WEBHOOK_SECRET, body) },
    body,
  })

  // The inbox: a plain run, a run with two approvals, and a sub-agent tree's request.
  await start("Refund order A-1001 $25, it arrived damaged.")
  await start("Email jane@example.com about order A-1017")
  await start("Refund order C-3107 $48, wrong size", true)

  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--force-color-profile=srgb"],
  })
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } })
  await page.goto(server.url)
  await page.locator("#token").fill(SIGN_IN)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.locator("#inbox").waitFor()
  // One card selected with its decline form open, as while answering with the keyboard.
  await page.locator(".card").nth(1).focus()
  await page.keyboard.press("d")
  await page.keyboard.type("please confirm the address first")
  await page.screenshot({ path: out("inbox.png"), fullPage: true })
  await page.goto(`${server.url}/history`)
  await page.locator("#history").waitFor()
  await page.screenshot({ path: out("history.png"), fullPage: true })
  await browser.close()
  process.stdout.write(`wrote ${out("inbox.png")} and ${out("history.png")}\n`)
} finally {
  await server.close()
  await toolkit.close()
  await store.close()
  rmSync(dir, { recursive: true, force: true })
}
