import { existsSync } from "node:fs"
import { createFakeLLMServer, type FakeLLMServer } from "@toolnexus/core/testing"
import { type Browser, chromium } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { listen, type RunningServer } from "../src/server.js"
import { agentReply, type Instance, instance, sqliteFiles, startRun } from "./support.js"

const CHROMIUM = "/usr/bin/chromium"
const haveChromium = existsSync(CHROMIUM)
if (!haveChromium) console.warn(`[approvals] ${CHROMIUM} does not exist: skipping the browser test`)

describe.skipIf(!haveChromium)("the page in headless Chromium", () => {
  const files = sqliteFiles()
  let fake: FakeLLMServer
  let service: Instance
  let server: RunningServer
  let browser: Browser

  beforeAll(async () => {
    fake = await createFakeLLMServer({ fallback: agentReply })
    service = await instance(fake, files.store())
    server = await listen(service.app, { port: 0, hostname: "127.0.0.1" })
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
      ],
    })
  })

  afterAll(async () => {
    await browser?.close()
    await server?.close()
    await fake?.close()
    await files.cleanup()
  })

  it("lists a parked request; Approve resumes the run and shows its final text", async () => {
    const run = await startRun(service.app, "refund order WEB-1 $31")
    const page = await browser.newPage()
    const problems: string[] = []
    page.on("pageerror", (error) => problems.push(error.message))
    // A CSP violation would mean the page's own script or style was blocked.
    page.on("console", (msg) => {
      if (msg.type() === "error") problems.push(msg.text())
    })
    await page.goto(server.url)

    const row = page.locator(`[data-request-id="${run.pending.id}"]`)
    await expect(row.locator(".prompt").textContent()).resolves.toBe("Refund $31.00 on order WEB-1?")
    await row.getByRole("button", { name: "Approve" }).click()

    const result = page.locator("#log li").first()
    await result.waitFor()
    expect(await result.textContent()).toMatch(
      /^Approved\. Run run-[\w-]+ finished: Done: Refunded \$31\.00 on order WEB-1 \(refund ref run-/,
    )
    await page.getByText("Nothing is waiting.").waitFor()
    expect(service.effects).toHaveLength(1)
    expect(problems).toEqual([])
    await page.close()
  })

  it("starts a run from the form, then Decline finishes it with the declined text", async () => {
    const page = await browser.newPage()
    const problems: string[] = []
    page.on("pageerror", (error) => problems.push(error.message))
    page.on("console", (msg) => {
      if (msg.type() === "error") problems.push(msg.text())
    })
    await page.goto(server.url)
    await page.locator("#prompt").fill("refund order WEB-2 $5")
    await page.getByRole("button", { name: "Start run" }).click()
    await page.locator("#log li", { hasText: "waits for: Refund $5.00 on order WEB-2?" }).waitFor()

    // The list was refreshed in place with the new request.
    const row = page.locator(".request", { hasText: "WEB-2" })
    await row.getByRole("button", { name: "Decline" }).click()
    const declined = page.locator("#log li", { hasText: "Declined." })
    await declined.waitFor()
    expect(await declined.textContent()).toMatch(
      /finished: Not done, it was declined: Refund \$5\.00 on order WEB-2\? \(declined\)$/,
    )
    await expect(row.count()).resolves.toBe(0)
    expect(problems).toEqual([])
    await page.close()
  })
})
