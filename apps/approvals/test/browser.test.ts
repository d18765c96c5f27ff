import { existsSync } from "node:fs"
import { createServer, request as httpRequest, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { createFakeLLMServer, type FakeLLMServer } from "@toolnexus/core/testing"
import type { DurableStore } from "@toolnexus/durable"
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { listen, type RunningServer } from "../src/server.js"
import { signBody } from "../src/security/webhook-signature.js"
import {
  ALICE_TOKEN,
  API_TOKEN,
  agentReply,
  answerTools,
  type Instance,
  instance,
  sqliteFiles,
  WEBHOOK_SECRET,
  XSS,
  xssTool,
} from "./support.js"

const CHROMIUM = "/usr/bin/chromium"
const haveChromium = existsSync(CHROMIUM)
if (!haveChromium) console.warn(`[approvals] ${CHROMIUM} does not exist: skipping the browser test`)

// The tests share one server and build on each other (the history test counts the declines of
// the tests above), so a second try would start from the first one's leftovers: no retry.
describe.skipIf(!haveChromium)("the inbox in headless Chromium", { retry: 0 }, () => {
  const files = sqliteFiles()
  const answers: unknown[] = []
  let fake: FakeLLMServer
  let service: Instance
  let server: RunningServer
  let attacker: Server
  let attackerUrl: string
  let browser: Browser
  let context: BrowserContext

  beforeAll(async () => {
    fake = await createFakeLLMServer({ fallback: agentReply })
    const store = files.store() as DurableStore & { listFailed?: unknown }
    // Attempts are not counted yet (DESIGN §9), so no request fails by itself: this store says one did.
    store.listFailed = async () => [
      {
        request: {
          id: "pnd-failed-web",
          kind: "approval",
          prompt: "Refund $9.00 on order FAIL-1?",
          data: { tool: "refund_order" },
        },
        conversationId: "run-failed",
        since: new Date(Date.now() - 3_600_000).toISOString(),
        attempts: 3,
        state: "failed",
        lastError: { name: "LLMHttpError", code: "TNX_LLM_HTTP", message: "LLM endpoint answered HTTP 500" },
      },
    ]
    service = await instance(fake, store, { extraTools: [...answerTools(answers), xssTool()] })
    server = await listen(service.app, { port: 0, hostname: "127.0.0.1" })
    // Another origin on the same machine (a different port is a different origin, the same
    // site: SameSite cookies are sent, so only the origin and CSRF checks stand in the way).
    attacker = createServer((req, res) => {
      res.setHeader("content-type", "text/html")
      res.end(attackPage(decodeURIComponent(req.url?.slice(1) ?? "")))
    })
    await new Promise<void>((resolve) => attacker.listen(0, "127.0.0.1", resolve))
    attackerUrl = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}`
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        // A DNS-rebinding name: resolves to the service's address.
        "--host-resolver-rules=MAP rebind.test 127.0.0.1",
      ],
    })
    context = await browser.newContext()
  })

  afterAll(async () => {
    await browser?.close()
    await server?.close()
    await new Promise((resolve) => attacker?.close(resolve))
    await fake?.close()
    await files.cleanup()
  })

  /** A signed-in page whose errors (CSP violations included) land in `problems`. */
  async function openInbox(path = "/"): Promise<{ page: Page; problems: string[] }> {
    const page = await context.newPage()
    const problems: string[] = []
    page.on("pageerror", (error) => problems.push(error.message))
    page.on("console", (msg) => {
      if (msg.type() === "error") problems.push(msg.text())
    })
    // Every inbox page listens for server-sent events; a test may rely on that from the start.
    const listening = page.waitForResponse((res) => res.url().endsWith("/events"))
    await page.goto(server.url + path)
    await listening
    return { page, problems }
  }

  /** Starts a run through the JSON API, as another client would. */
  async function startRun(prompt: string, team = false): Promise<any> {
    const res = await fetch(`${server.url}/runs`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${API_TOKEN}` },
      body: JSON.stringify({ prompt, team }),
    })
    return res.json()
  }

  /** Answers a request through the JSON API, so it does not stay in the inbox of later tests. */
  async function answerById(id: string, answer: { ok: boolean }): Promise<void> {
    const res = await fetch(`${server.url}/requests/${id}/answer`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${API_TOKEN}` },
      body: JSON.stringify(answer),
    })
    expect(res.status).toBe(200)
  }

  const card = (page: Page, id: string) => page.locator(`.card[data-request-id="${id}"]`)
  const effectsFor = (orderId: string) => service.effects.filter((e) => e.args.orderId === orderId)

  it("signs in with a token; a wrong token is refused; the session cookie is HttpOnly", async () => {
    const page = await context.newPage()
    await page.goto(server.url)
    expect(new URL(page.url()).pathname).toBe("/signin")
    await page.locator("#token").fill("not-the-right-token")
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.getByText("That token is not valid.").waitFor()
    await page.locator("#token").fill(ALICE_TOKEN)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.locator(".user", { hasText: "alice" }).waitFor()
    expect(new URL(page.url()).pathname).toBe("/")
    expect(await page.evaluate("document.cookie")).not.toContain("tnx_session")
    const [cookie] = (await context.cookies()).filter((c) => c.name === "tnx_session")
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Strict" })
    await page.close()
  })

  it("signs out: the cookie is gone and the inbox asks to sign in again", async () => {
    const other = await browser.newContext()
    const page = await other.newPage()
    await page.goto(server.url)
    await page.locator("#token").fill(ALICE_TOKEN)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.getByRole("button", { name: "Sign out" }).click()
    await page.locator("#token").waitFor()
    expect((await other.cookies()).filter((c) => c.name === "tnx_session")).toEqual([])
    await page.goto(server.url)
    expect(new URL(page.url()).pathname).toBe("/signin")
    await other.close()
  })

  it("approves with a click; the card goes and the run's result is shown", async () => {
    const run = await startRun("refund order WEB-1 $31")
    const { page, problems } = await openInbox()
    const row = card(page, run.pending.id)
    await expect(row.locator(".prompt").textContent()).resolves.toBe("Refund $31.00 on order WEB-1?")
    await expect(row.locator(".tool").textContent()).resolves.toBe("refund_order")
    await expect(row.locator(".args dt").allTextContents()).resolves.toEqual(["orderId", "amountUsd"])
    await expect(row.locator(".args dd").allTextContents()).resolves.toEqual(["WEB-1", "31"])
    await row.getByRole("button", { name: /^Approve/ }).click()
    const result = page.locator("#log li").first()
    await result.waitFor()
    expect(await result.textContent()).toMatch(
      /^Approved\. Run run-[\w-]+ finished: Done: Refunded \$31\.00 on order WEB-1/,
    )
    await row.waitFor({ state: "detached" })
    expect(effectsFor("WEB-1")).toHaveLength(1)
    expect(problems).toEqual([])
    await page.close()
  })

  it("declines with a reason using only the keyboard", async () => {
    const run = await startRun("refund order WEB-2 $5")
    const { page, problems } = await openInbox()
    const row = card(page, run.pending.id)
    await row.focus()
    // j / k move the selection and come back to the same card.
    const at = await row.evaluate((el) => [...el.ownerDocument.querySelectorAll(".card")].indexOf(el))
    await page.keyboard.press(at > 0 ? "k" : "j")
    await expect(row.evaluate((el) => el.classList.contains("selected"))).resolves.toBe(false)
    await page.keyboard.press(at > 0 ? "j" : "k")
    await expect(
      row.evaluate((el) => el.classList.contains("selected") && el === el.ownerDocument.activeElement),
    ).resolves.toBe(true)
    await page.keyboard.press("d")
    const reason = row.locator('form[data-form="decline"] input[name="reason"]')
    await expect(reason.evaluate((el) => el === el.ownerDocument.activeElement)).resolves.toBe(true)
    await page.keyboard.type("no receipt")
    // A run parked elsewhere redraws the inbox while the reason is typed: the field keeps the
    // keys (they once fell through to the page, where an "a" is a shortcut).
    const meanwhile = await startRun("refund order WEB-2B $4")
    await card(page, meanwhile.pending.id).waitFor({ timeout: 10_000 })
    await expect(reason.evaluate((el) => el === el.ownerDocument.activeElement)).resolves.toBe(true)
    await page.keyboard.type(" attached")
    await expect(reason.inputValue()).resolves.toBe("no receipt attached")
    await page.keyboard.press("Enter")
    const declined = page.locator("#log li", { hasText: "Declined." })
    await declined.waitFor()
    expect(await declined.textContent()).toMatch(
      /Not done, it was declined: Refund \$5\.00 on order WEB-2\? \(no receipt attached\)$/,
    )
    expect(effectsFor("WEB-2")).toEqual([])
    expect(effectsFor("WEB-2B")).toEqual([])
    await answerById(meanwhile.pending.id, { ok: true })
    expect(problems).toEqual([])
    await page.close()
  })

  it("issue 25: keys act only on the visibly selected card, a asks again before approving, Esc closes Start a run", async () => {
    const first = await startRun("refund order WEB-25A $7")
    const second = await startRun("refund order WEB-25B $8")
    const { page, problems } = await openInbox()
    const selected = () => page.locator(".card.selected").count()
    // Nothing is selected on load, so a key that decides does nothing.
    expect(await selected()).toBe(0)
    await page.keyboard.press("a")
    expect(await page.locator(".card.confirming").count()).toBe(0)
    expect(await page.locator("#log li").count()).toBe(0)
    // The first j selects the first card, not the second.
    await page.keyboard.press("j")
    await expect(
      page
        .locator(".card")
        .first()
        .evaluate((el) => el.classList.contains("selected") && el === el.ownerDocument.activeElement),
    ).resolves.toBe(true)
    expect(await selected()).toBe(1)

    // On a picked card, a only asks; Esc takes the question back; a, a approves.
    const row = card(page, first.pending.id)
    await row.focus()
    await page.keyboard.press("a")
    await expect(row.evaluate((el) => el.classList.contains("confirming"))).resolves.toBe(true)
    expect(await page.locator("#log li").first().textContent()).toBe(
      "Press a again to approve: Refund $7.00 on order WEB-25A? (Esc cancels)",
    )
    expect(effectsFor("WEB-25A")).toEqual([])
    await page.keyboard.press("Escape")
    await expect(row.evaluate((el) => el.classList.contains("confirming"))).resolves.toBe(false)
    await page.keyboard.press("a")
    await page.keyboard.press("a")
    await page.locator("#log li", { hasText: "Approved." }).waitFor()
    await row.waitFor({ state: "detached" })
    expect(effectsFor("WEB-25A")).toHaveLength(1)
    expect(effectsFor("WEB-25B")).toEqual([])

    // A decline is styled as a decline, not as the green of a success.
    const other = card(page, second.pending.id)
    await other.focus()
    await page.keyboard.press("d")
    const why = other.locator('form[data-form="decline"] input[name="reason"]')
    await expect(why.evaluate((el) => el === el.ownerDocument.activeElement)).resolves.toBe(true)
    await page.keyboard.type("duplicate")
    await page.keyboard.press("Enter")
    const declined = page.locator("#log li", { hasText: "Declined." })
    await declined.waitFor()
    expect(await declined.getAttribute("class")).toBe("declined")
    const colours = await declined.evaluate(
      (el) => el.ownerDocument.defaultView?.getComputedStyle(el).backgroundColor,
    )
    const approved = await page
      .locator("#log li", { hasText: "Approved." })
      .evaluate((el) => el.ownerDocument.defaultView?.getComputedStyle(el).backgroundColor)
    expect(colours).not.toBe(approved)

    // The tab has an icon (it was a 404), allowed by the page's CSP.
    expect(await page.locator('link[rel="icon"]').getAttribute("href")).toBe("/favicon.svg")
    for (const path of ["/favicon.svg", "/favicon.ico"]) {
      const icon = await page.request.get(server.url + path)
      expect(icon.status()).toBe(200)
      expect(icon.headers()["content-type"]).toBe("image/svg+xml")
      expect(await icon.text()).toMatch(/^<svg /)
    }

    // Esc closes "Start a run", from its prompt field too.
    await page.keyboard.press("n")
    await expect(
      page.locator("details.start").evaluate((el) => (el as unknown as { open: boolean }).open),
    ).resolves.toBe(true)
    await page.keyboard.press("Escape")
    await expect(
      page.locator("details.start").evaluate((el) => (el as unknown as { open: boolean }).open),
    ).resolves.toBe(false)
    expect(problems).toEqual([])
    await page.close()
  })

  it("issue 25: a string argument's line breaks are shown as line breaks, as text", async () => {
    const run = await startRun("email a letter to Jane <b>now</b>")
    const { page, problems } = await openInbox()
    const row = card(page, run.pending.id)
    const body = row.locator(".args dd .text").nth(2)
    // The text itself, not a JSON rendering of it: no backslash-n, and no markup made of it.
    expect(await body.textContent()).toBe("Dear Jane,\n\nYour refund is on its way.\n\nSupport")
    expect(await body.evaluate((el) => el.ownerDocument.defaultView?.getComputedStyle(el).whiteSpace)).toBe(
      "pre-wrap",
    )
    // Five lines tall: the breaks are rendered (one line of text is a fifth of that).
    const lineHeight = await body.evaluate((el) =>
      Number.parseFloat(el.ownerDocument.defaultView?.getComputedStyle(el).lineHeight ?? "0"),
    )
    const box = await body.boundingBox()
    expect(Math.round((box?.height ?? 0) / lineHeight)).toBe(5)
    expect(await row.locator(".args dd .text").nth(1).innerHTML()).toBe(
      "email a letter to Jane &lt;b&gt;now&lt;/b&gt;",
    )
    expect(await row.locator(".args b").count()).toBe(0)
    expect(problems).toEqual([])
    await page.close()
    await answerById(run.pending.id, { ok: true })
  })

  it("issue 25: /requests/:id is the request's own page, answerable there; an unknown id is a 404 page", async () => {
    const run = await startRun("refund order PAGE-1 $12")
    const { page, problems } = await openInbox()
    // Each card links to its page.
    await card(page, run.pending.id).locator("a.permalink").click()
    await page.waitForURL(`**/requests/${run.pending.id}`)
    expect(await page.title()).toBe("Request · toolnexus approvals")
    await expect(page.locator(".card").count()).resolves.toBe(1)
    const row = card(page, run.pending.id)
    await expect(row.locator(".prompt").textContent()).resolves.toBe("Refund $12.00 on order PAGE-1?")
    await row.getByRole("button", { name: /^Approve/ }).click()
    await page.locator("#log li", { hasText: "Approved." }).waitFor()
    await row.waitFor({ state: "detached" })
    expect(effectsFor("PAGE-1")).toHaveLength(1)
    // The same address now: answered, so no run waits on it.
    const gone = await page.goto(`${server.url}/requests/${run.pending.id}`)
    expect(gone?.status()).toBe(404)
    await expect(page.locator("#request h2").textContent()).resolves.toBe("No such request")
    const unknown = await page.goto(`${server.url}/requests/${encodeURIComponent("<i>nope</i>")}`)
    expect(unknown?.status()).toBe(404)
    await expect(page.locator("#request code").textContent()).resolves.toBe("<i>nope</i>")
    expect(await page.locator("#request i").count()).toBe(0)
    // API clients still get JSON from the same path.
    const api = await fetch(`${server.url}/requests/nope`, {
      headers: { authorization: `Bearer ${API_TOKEN}` },
    })
    expect([api.status, ((await api.json()) as any).error.code]).toEqual([404, "unknown_request"])
    // The browser reports the two 404 pages it was sent to; nothing else went wrong.
    expect(problems.filter((p) => !p.includes("status of 404"))).toEqual([])
    await page.close()
  })

  it("issue 25: at 390 px nothing scrolls sideways and every button is on screen", async () => {
    const run = await startRun("refund order NARROW-1 $9")
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 } })
    const page = await phone.newPage()
    await page.goto(server.url)
    await page.locator("#token").fill(ALICE_TOKEN)
    await page.getByRole("button", { name: "Sign in" }).click()
    const row = card(page, run.pending.id)
    await row.waitFor()
    const sideways = () => page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    const onScreen = async (locator: ReturnType<Page["locator"]>) => {
      const box = await locator.boundingBox()
      return box !== null && box.x >= 0 && box.x + box.width <= 390
    }
    expect(await sideways()).toBe(0)
    for (const button of [
      page.getByRole("button", { name: "Sign out" }),
      row.getByRole("button", { name: /^Approve/ }),
      row.getByRole("button", { name: /^Edit, then approve/ }),
      row.getByRole("button", { name: /^Decline/ }),
    ]) {
      await expect(onScreen(button), (await button.textContent()) ?? "").resolves.toBe(true)
    }
    await page.goto(`${server.url}/history`)
    await page.locator("#history tbody tr").first().waitFor()
    expect(await sideways()).toBe(0)
    await expect(onScreen(page.getByRole("button", { name: "Sign out" }))).resolves.toBe(true)
    await expect(onScreen(page.getByRole("button", { name: "Filter" }))).resolves.toBe(true)
    // The history's cells are readable, stacked, not cut off by a table wider than the screen.
    const cell = page.locator("#history tbody tr").first().locator("td").nth(3)
    await expect(onScreen(cell)).resolves.toBe(true)
    await phone.close()
    await answerById(run.pending.id, { ok: true })
  })

  it("edits an argument the tool allows, then approves; the tool acts on the edit", async () => {
    const run = await startRun("refund order WEB-3 $80")
    const { page, problems } = await openInbox()
    const row = card(page, run.pending.id)
    await row.getByRole("button", { name: /^Edit, then approve/ }).click()
    const form = row.locator('form[data-form="edit"]')
    // orderId is not editable: only amount and reason are offered.
    await expect(
      form.locator("[name]").evaluateAll((els) => els.map((el) => el.getAttribute("name"))),
    ).resolves.toEqual(["amountUsd"])
    await form.locator('input[name="amountUsd"]').fill("55.5")
    await form.getByRole("button", { name: "Approve with these arguments" }).click()
    await page.locator("#log li", { hasText: "Approved with changes." }).waitFor()
    expect(effectsFor("WEB-3")).toHaveLength(1)
    expect(effectsFor("WEB-3")[0]?.args).toMatchObject({ orderId: "WEB-3", amountUsd: 55.5 })
    expect(problems).toEqual([])
    await page.close()
  })

  it("responds to a question with text, and fills in an MCP elicitation's form", async () => {
    const question = await startRun("please ask the customer")
    const form = await startRun("open the shipping form")
    const { page, problems } = await openInbox()
    const asked = card(page, question.pending.id)
    await asked.focus()
    await page.keyboard.press("r")
    await asked.locator("textarea[name=text]").fill("teal, please")
    await asked.getByRole("button", { name: "Send" }).click()
    await page.locator("#log li", { hasText: "Responded." }).waitFor()

    const elicited = card(page, form.pending.id)
    await expect(elicited.locator(".tool").textContent()).resolves.toBe("crm › update_address")
    await elicited.getByRole("button", { name: /^Fill in/ }).click()
    await elicited.getByLabel("Street").fill("Main St 1")
    await elicited.getByLabel("ZIP code").fill("1000")
    await elicited.getByLabel("Floor").fill("4")
    await elicited.getByLabel("Express delivery").check()
    await elicited.locator("select[name=carrier]").selectOption("ups")
    await elicited.getByRole("button", { name: "Submit" }).click()
    await page.locator("#log li", { hasText: "Submitted." }).waitFor()
    expect(answers).toEqual([
      { text: "teal, please" },
      { street: "Main St 1", zip: "1000", floor: 4, express: true, carrier: "ups" },
    ])
    expect(problems).toEqual([])
    await page.close()
  })

  it("shows a tree's request once, with breadcrumbs, and one approval resumes the tree", async () => {
    const { page, problems } = await openInbox()
    await page.locator("details.start summary").click()
    await page.locator("#prompt").fill("refund order TREE-1 $15")
    await page.locator("#team").check()
    await page.getByRole("button", { name: "Start run" }).click()
    await page.locator("#log li", { hasText: "now waits for: Refund $15.00 on order TREE-1?" }).waitFor()
    const rows = page.locator(".card", { hasText: "TREE-1" })
    await rows.first().waitFor()
    await expect(rows.count()).resolves.toBe(1)
    await expect(rows.locator(".breadcrumbs li").allTextContents()).resolves.toEqual([
      "root",
      "support.1",
      "payments.1",
    ])
    await rows.getByRole("button", { name: /^Approve/ }).click()
    const done = page.locator("#log li", { hasText: "Approved." })
    await done.waitFor()
    expect(await done.textContent()).toMatch(
      /Run team-[\w-]+ finished: Done: Done: Refunded \$15\.00 on order TREE-1/,
    )
    expect(effectsFor("TREE-1")).toHaveLength(1)
    expect(problems).toEqual([])
    await page.close()
  })

  it("updates live: a run parked by another client appears without a reload", async () => {
    const { page, problems } = await openInbox()
    await page.locator("#inbox").waitFor()
    const run = await startRun("refund order LIVE-1 $3")
    await card(page, run.pending.id).waitFor({ timeout: 10_000 })
    // Answered elsewhere (a signed webhook): the card goes away by itself too.
    const body = JSON.stringify({ id: run.pending.id, ok: true })
    const res = await fetch(`${server.url}/webhooks/answer`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-toolnexus-signature": signBody(WEBHOOK_SECRET, body),
      },
      body,
    })
    expect(res.status).toBe(200)
    await card(page, run.pending.id).waitFor({ state: "detached", timeout: 10_000 })
    expect(problems).toEqual([])
    await page.close()
  })

  it("keeps the history across a reload, and filters it", async () => {
    const { page, problems } = await openInbox("/history")
    await page.reload()
    const rows = page.locator("#history tbody tr")
    await rows.first().waitFor()
    const text = (await page.locator("#history").textContent()) ?? ""
    expect(text).toContain("no receipt attached")
    expect(text).toContain("approved with changes")
    expect(text).toContain("alice")
    await page.locator("select[name=decision]").selectOption("declined")
    await page.getByRole("button", { name: "Filter" }).click()
    await page.waitForURL(/decision=declined/)
    // The two declines of the tests above (the keyboard one, and issue 25's).
    await expect(page.locator("#history tbody tr").count()).resolves.toBe(2)
    await expect(page.locator("#history .reason").allTextContents()).resolves.toEqual(
      expect.arrayContaining(["no receipt attached", "duplicate"]),
    )
    expect(problems).toEqual([])
    await page.close()
  })

  it("shows a failed request with its error and a retry button", async () => {
    const { page, problems } = await openInbox()
    const failed = page.locator('[data-failed-id="pnd-failed-web"]')
    await expect(failed.locator(".error-text").textContent()).resolves.toBe(
      "TNX_LLM_HTTP: LLM endpoint answered HTTP 500",
    )
    await failed.getByRole("button", { name: "Retry with the stored decision" }).click()
    // The retry reaches @toolnexus/durable's retryFailed; the stubbed entry is not failed in
    // the real store, and the page says what the server answered.
    await page.locator("#log li.error", { hasText: "nothing waits on it" }).waitFor()
    expect(problems.filter((p) => !p.includes("404"))).toEqual([])
    await page.close()
  })

  describe("attacks", () => {
    it("no markup from a model, a tool or an approver runs, on the inbox or in the history", async () => {
      const probe = await startRun("xss probe")
      const other = await startRun("refund order XSS-1 $1")
      const { page, problems } = await openInbox()
      const dialogs: string[] = []
      page.on("dialog", (dialog) => {
        dialogs.push(dialog.message())
        void dialog.dismiss()
      })
      const row = card(page, probe.pending.id)
      await row.getByRole("button", { name: /^Fill in/ }).click()
      // The text is shown as text, exactly as the tool wrote it.
      await expect(row.locator(".prompt").textContent()).resolves.toBe(
        `Fill ${XSS.img(5)} in ${XSS.script(6)}`,
      )
      await expect(row.locator(".link").textContent()).resolves.toBe("javascript:window.pwned=7")
      await expect(row.locator(".link a").count()).resolves.toBe(0)
      // An approver's reason goes into the history, which is shown next.
      await card(page, other.pending.id)
        .getByRole("button", { name: /^Decline/ })
        .click()
      await card(page, other.pending.id).locator("input[name=reason]").fill(XSS.img(16))
      await card(page, other.pending.id).getByRole("button", { name: "Decline", exact: true }).click()
      await page.locator("#log li", { hasText: "Declined." }).waitFor()
      await page.goto(`${server.url}/history`)
      await expect(page.locator("#history .reason").first().textContent()).resolves.toBe(XSS.img(16))
      expect(await page.evaluate(() => (globalThis as { pwned?: unknown }).pwned)).toBeUndefined()
      expect(dialogs).toEqual([])
      expect(problems).toEqual([])
      await page.close()
      await fetch(`${server.url}/requests/${probe.pending.id}/answer`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${API_TOKEN}` },
        body: JSON.stringify({ ok: false }),
      })
    })

    it("a text/plain form posted from another origin answers nothing", async () => {
      const run = await startRun("refund order EVIL-1 $999")
      const page = await context.newPage()
      const response = page.waitForResponse(
        (res) => res.url().includes("/answer") && res.request().method() === "POST",
      )
      await page.goto(
        `${attackerUrl}/${encodeURIComponent(`${server.url}/requests/${run.pending.id}/answer`)}`,
      )
      expect((await response).status()).toBe(403)
      // The attacker's script also tried fetch() in both CORS modes.
      await page.waitForFunction("window.attempts?.length === 2")
      expect(effectsFor("EVIL-1")).toEqual([])
      const listed: any = await (
        await fetch(`${server.url}/requests/${run.pending.id}`, {
          headers: { authorization: `Bearer ${API_TOKEN}` },
        })
      ).json()
      expect(listed.request.id).toBe(run.pending.id)
      await page.close()
    })

    it("a DNS-rebinding page under another name is refused", async () => {
      const page = await context.newPage()
      const response = await page.goto(server.url.replace("127.0.0.1", "rebind.test"))
      expect(response?.status()).toBe(403)
      expect(await page.textContent("body")).toContain("forbidden_host")
      await page.close()
    })

    it("a forged Host header, an unsigned or replayed webhook and an oversized body are refused", async () => {
      const run = await startRun("refund order EVIL-2 $999")
      expect(await rawStatus(server, { path: "/requests", host: "attacker.example", token: API_TOKEN })).toBe(
        403,
      )

      const body = JSON.stringify({ id: run.pending.id, ok: true })
      const post = (headers: Record<string, string>, data = body) =>
        fetch(`${server.url}/webhooks/answer`, {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body: data,
        })
      expect((await post({})).status).toBe(401)
      const stale = signBody(WEBHOOK_SECRET, body, Date.now() - 3_600_000)
      expect((await post({ "x-toolnexus-signature": stale })).status).toBe(401)
      const signature = signBody(
        WEBHOOK_SECRET,
        JSON.stringify({ id: run.pending.id, ok: false, reason: "declined" }),
      )
      const declined = JSON.stringify({ id: run.pending.id, ok: false, reason: "declined" })
      expect((await post({ "x-toolnexus-signature": signature }, declined)).status).toBe(200)
      const replay = await post({ "x-toolnexus-signature": signature }, declined)
      expect(replay.status).toBe(409)
      expect(((await replay.json()) as any).error.code).toBe("webhook_replayed")

      // From the signed-in page itself: the body limit holds for the page's own requests.
      const run3 = await startRun("refund order EVIL-3 $999")
      const { page } = await openInbox()
      const csrf = await page.locator('meta[name="csrf-token"]').getAttribute("content")
      const status = await page.evaluate(
        async ([id, csrf]) => {
          const res = await fetch(`/requests/${id}/answer`, {
            method: "POST",
            headers: { "content-type": "application/json", "x-csrf-token": csrf ?? "" },
            body: JSON.stringify({ ok: true, data: { padding: "x".repeat(100_000) } }),
          })
          return res.status
        },
        [run3.pending.id as string, csrf ?? ""],
      )
      expect(status).toBe(413)
      expect(effectsFor("EVIL-2")).toEqual([])
      expect(effectsFor("EVIL-3")).toEqual([])
      await page.close()
    })
  })
})

/**
 * The attacker's page: a cross-site form in the `text/plain` encoding (the classic way to post
 * a JSON-looking body without a preflight), submitted at once into a frame, and two fetches.
 */
function attackPage(target: string): string {
  const field = `{"ok":true,"pad":"`
  return `<!doctype html><html><body>
<iframe name="sink"></iframe>
<form id="f" method="POST" action="${target}" enctype="text/plain" target="sink"><input name='${field}' value='"}'></form>
<script>
window.attempts = []
document.getElementById("f").submit()
const body = JSON.stringify({ ok: true })
fetch(${JSON.stringify(target)}, { method: "POST", mode: "no-cors", credentials: "include", headers: { "content-type": "text/plain" }, body })
  .then(() => attempts.push("no-cors sent"), () => attempts.push("no-cors failed"))
fetch(${JSON.stringify(target)}, { method: "POST", credentials: "include", headers: { "content-type": "application/json" }, body })
  .then(() => attempts.push("cors sent"), () => attempts.push("cors blocked"))
</script></body></html>`
}

/** A GET with a chosen Host header (fetch does not let a caller set one). */
function rawStatus(
  server: RunningServer,
  opts: { path: string; host: string; token: string },
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: "127.0.0.1",
        port: server.port,
        path: opts.path,
        headers: { host: opts.host, authorization: `Bearer ${opts.token}` },
      },
      (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      },
    )
    req.on("error", reject)
    req.end()
  })
}
