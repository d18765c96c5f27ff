import { expect, it } from "vitest"
import { createMemoryStore, createNotificationOutbox, createStoreHost } from "../src/index.js"

it("refuses bad outbox options with a ConfigError naming them, on the outbox and the host", () => {
  const store = createMemoryStore()
  const bad: [object, RegExp][] = [
    [{ notify: "https://example.com" }, /notify must be a function/],
    [{ warnBeforeMs: 0 }, /warnBeforeMs must be a positive integer/],
    [{ notifyTimeoutMs: 1.5 }, /notifyTimeoutMs must be a positive integer/],
    [{ clock: {} }, /clock must be an object with a now\(\) method/],
  ]
  for (const [opts, message] of bad) {
    expect(() => createNotificationOutbox(store, opts as never)).toThrow(message)
    expect(() => createStoreHost({ store, agents: [], sweepEveryMs: false, ...opts } as never)).toThrow(
      expect.objectContaining({ code: "TNX_CONFIG", message: expect.stringMatching(message) }),
    )
  }
})

it("an outbox without notify or warnBeforeMs sends nothing and records nothing", async () => {
  const store = createMemoryStore()
  const outbox = createNotificationOutbox(store, {})
  await outbox.sweep()
  await outbox.parked("nothing")
  expect(await outbox.getDelivery("nothing")).toBeUndefined()
})
