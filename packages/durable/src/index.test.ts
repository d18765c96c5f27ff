import { expect, it } from "vitest"
import * as durable from "./index.js"

// Pins the public surface: adding or removing an export must be a deliberate change here.
it("exports exactly the public runtime surface, and no store class from the root", () => {
  expect(Object.keys(durable).sort()).toEqual([
    "ClaimLostError",
    "CorruptDataError",
    "RuntimeCollisionError",
    "RuntimeHeldError",
    "askWithAnswer",
    "createMemoryStore",
    "createNotificationOutbox",
    "createStoreHost",
    "deliverAnswer",
    "loadRuntime",
    "openStore",
    "resumeRuntime",
    "retryFailed",
    "runWithAnswer",
    "saveRuntime",
    "startHostedRun",
    "sweepExpiredClaims",
    "sweepExpiredRequests",
  ])
})
