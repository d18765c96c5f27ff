import { spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { type NotifyInfo, createClient, createToolkit, hostAgent } from "@toolnexus/core"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, expect, it } from "vitest"
import { createStoreHost, openStore } from "../src/index.js"

const WORKER = fileURLToPath(new URL("./fixtures/notify-worker.mjs", import.meta.url))
const dir = mkdtempSync(join(tmpdir(), "tnx-notify-kill-"))
let server: FakeLLMServer
beforeAll(async () => {
  server = await createFakeLLMServer()
})
afterAll(async () => {
  await server?.close()
  rmSync(dir, { recursive: true, force: true })
})

it("a host SIGKILLed between park and notify loses nothing: a new host notifies exactly once", async () => {
  const storeUrl = `sqlite:${join(dir, "outbox.db")}`
  const runId = `kill-${randomUUID()}`
  server.enqueue({ toolCalls: [{ name: "pay", arguments: { amount: 5 } }] })
  const child = spawn(process.execPath, [WORKER, storeUrl, runId, `${server.url}/v1`], {
    stdio: ["ignore", "pipe", "pipe"],
  })
  let err = ""
  child.stderr.on("data", (d) => {
    err += d
  })
  const requestId = await new Promise<string>((resolve, reject) => {
    let out = ""
    child.stdout.on("data", (d) => {
      out += d
      const nl = out.indexOf("\n")
      if (nl !== -1) resolve((JSON.parse(out.slice(0, nl)) as { notifying: string }).notifying)
    })
    child.on("exit", (code) => reject(new Error(`worker exited (${code}) before notifying: ${err}`)))
  })
  const exited = new Promise((resolve) => child.on("exit", resolve))
  child.kill("SIGKILL")
  await exited

  const store = await openStore(storeUrl)
  const client = createClient({
    baseUrl: `${server.url}/v1`,
    style: "openai",
    model: "m",
    apiKey: "k",
    store,
  })
  const calls: [string, NotifyInfo][] = []
  // The killed attempt is in flight as far as the store knows: it counts as dead once its
  // heartbeat is 5 s old, so the new host's clock moves past that.
  let t = Date.now()
  const host = createStoreHost({
    store,
    agents: [hostAgent({ name: "payer", client, toolkit: await createToolkit({}) })],
    sweepEveryMs: false,
    clock: { now: () => t },
    notify: async (entry, info) => {
      calls.push([entry.request.id, info])
    },
  })
  try {
    // The killed attempt counts; the next one is this host's.
    expect(await host.getDelivery(requestId)).toMatchObject({ attempts: 1 })
    await host.sweep()
    expect(calls).toEqual([])
    t += 5_000
    await host.sweep()
    await host.sweep()
    expect(calls).toEqual([[requestId, { kind: "new", attempt: 2 }]])
    expect(await host.getDelivery(requestId)).toMatchObject({ attempts: 2, deliveredAt: expect.any(String) })
    // A third host over the store sends nothing again.
    const later: string[] = []
    const third = createStoreHost({
      store,
      agents: [],
      sweepEveryMs: false,
      notify: async (entry) => {
        later.push(entry.request.id)
      },
    })
    await third.sweep()
    await third.close()
    expect(later).toEqual([])
  } finally {
    await host.close()
    await store.close()
  }
})
