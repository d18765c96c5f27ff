import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type Browser, type Page, chromium } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ChatServer, startChatServer } from "../src/server.js"

const CHROMIUM = "/usr/bin/chromium"
const haveChromium = existsSync(CHROMIUM)
if (!haveChromium) console.warn(`[chat] ${CHROMIUM} does not exist: skipping the browser test`)

describe.skipIf(!haveChromium)("the chat page in headless Chromium (useChat from @ai-sdk/react)", () => {
  const dir = mkdtempSync(join(tmpdir(), "tnx-chat-"))
  const databasePath = join(dir, "chat.db")
  let server: ChatServer
  let browser: Browser
  let page: Page

  beforeAll(async () => {
    // The page the test serves is the one this source builds, never a stale bundle.
    const script = "../scripts/build-page.mjs"
    const { buildPage } = (await import(script)) as { buildPage(): Promise<void> }
    await buildPage()
    server = await startChatServer({ databasePath, port: 0 })
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
      ],
    })
    page = await browser.newPage()
    await page.goto(server.url)
  })

  afterAll(async () => {
    await browser?.close()
    await server?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  async function say(text: string) {
    await page.getByLabel("Message").fill(text)
    await page.getByRole("button", { name: "Send" }).click()
  }

  it("approves a refund after a server restart and sees the final text", async () => {
    await say("Refund order 42")
    const card = page.getByTestId("approval")
    await card.waitFor()
    expect(await card.textContent()).toContain('refund {"orderId":"42","amount":30}')
    expect(server.refunds).toEqual([])

    // The server stops between the card and the click; a new one opens the same SQLite file.
    const { port } = server
    await server.close()
    server = await startChatServer({ databasePath, port })

    await card.getByRole("button", { name: "Approve" }).click()
    await page.getByText("Refunded 30 EUR on order 42.").waitFor()
    expect(await page.getByTestId("tool-refund").getAttribute("data-state")).toBe("output-available")
    expect(server.refunds.map((r) => r.orderId)).toEqual(["42"])
  })

  it("runs the relay tool in the browser and answers an input question", async () => {
    await say("What time is it?")
    await page.getByText(/^It is \d\d:\d\d:\d\d in .+\.$/).waitFor()
    expect(await page.getByTestId("tool-browser_time").getAttribute("data-state")).toBe("output-available")

    await say("Send me the receipt")
    const question = page.getByTestId("question")
    await question.waitFor()
    await question.getByLabel("Answer").fill("ada@example.com")
    await question.getByRole("button", { name: "Answer" }).click()
    await page.getByText("The receipt goes to ada@example.com.").waitFor()
    expect(await page.getByRole("alert").count()).toBe(0)
  })

  // Issue 37: the 409 while a card waits reached the person as raw JSON naming server APIs.
  it("a message sent while an approval waits is answered in the chat's own words", async () => {
    await say("Refund order 7")
    await page.getByTestId("approval").last().waitFor()
    await say("And order 8?")
    const alert = page.getByRole("alert")
    await alert.waitFor()
    expect(await alert.textContent()).toMatch(
      /^This chat is waiting for your answer to ".+"\. Answer it first, then send your message\.$/,
    )
    expect(server.refunds.map((r) => r.orderId)).toEqual(["42"])
  })

  // Issue 37: a reload while an approval waited left an empty page; now it loads the chat back.
  it("a reload mid-approval shows the chat and its card again; Approve finishes the refund", async () => {
    const tab = await browser.newPage()
    try {
      await tab.goto(server.url)
      await tab.getByLabel("Message").fill("Refund order 9")
      await tab.getByRole("button", { name: "Send" }).click()
      await tab.getByTestId("approval").waitFor()
      const url = tab.url()
      expect(url).toMatch(/#chat-/)

      await tab.reload()
      const card = tab.getByTestId("approval")
      await card.waitFor()
      expect(tab.url()).toBe(url)
      expect(await card.textContent()).toContain('refund {"orderId":"9","amount":30}')
      expect(await tab.locator(".msg.user").allTextContents()).toEqual(["Refund order 9"])
      expect(server.refunds.map((r) => r.orderId)).not.toContain("9")

      await card.getByRole("button", { name: "Approve" }).click()
      await tab.getByText("Refunded 30 EUR on order 9.").waitFor()
      expect(await tab.getByTestId("tool-refund").getAttribute("data-state")).toBe("output-available")
      expect(server.refunds.filter((r) => r.orderId === "9")).toHaveLength(1)
      expect(await tab.getByRole("alert").count()).toBe(0)
    } finally {
      await tab.close()
    }
  })
})
