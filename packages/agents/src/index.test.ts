import { expect, it } from "vitest"
import * as agents from "./index.js"

// Pins the public surface: adding or removing an export must be a deliberate change here.
it("exports exactly the public runtime surface", () => {
  expect(Object.keys(agents).sort()).toEqual([
    "AgentsError",
    "BOOTSTRAP_ORDER",
    "ClosedError",
    "HEARTBEAT_OK",
    "HEARTBEAT_PROMPT",
    "InboxFullError",
    "RuntimeError",
    "SNAPSHOT_VERSION",
    "TICK_CHANNEL",
    "TIMER_CHANNEL",
    "agent",
    "composeSoul",
    "createRuntime",
    "createVirtualClock",
    "fromDir",
    "memoryTool",
    "restoreRuntime",
    "runEngineTree",
    "startAgent",
    "systemClock",
  ])
})
