import { ToolnexusError } from "@toolnexus/core"
import { describe, expect, it, vi } from "vitest"
import { AgentsError, ClosedError, InboxFullError, RuntimeError } from "./errors.js"

// Every agents error: its name, its TNX_ code, its reason (RuntimeError family) and message.
const TABLE = [
  {
    error: new RuntimeError("unknown_agent", 'unknown agent "nobody"; registered: lead'),
    name: "RuntimeError",
    code: "TNX_RUNTIME",
    reason: "unknown_agent",
    message: 'unknown agent "nobody"; registered: lead',
  },
  {
    error: new RuntimeError("max_children", "root/lead.1 may spawn at most 2 children"),
    name: "RuntimeError",
    code: "TNX_RUNTIME",
    reason: "max_children",
    message: "root/lead.1 may spawn at most 2 children",
  },
  {
    error: new RuntimeError("max_depth", "root/lead.1 is at the maximum depth of its budget"),
    name: "RuntimeError",
    code: "TNX_RUNTIME",
    reason: "max_depth",
    message: "root/lead.1 is at the maximum depth of its budget",
  },
  {
    error: new RuntimeError("budget_exhausted", "cannot spawn w under root/lead.1: maxTokens is used up"),
    name: "RuntimeError",
    code: "TNX_RUNTIME",
    reason: "budget_exhausted",
    message: "cannot spawn w under root/lead.1: maxTokens is used up",
  },
  {
    error: new RuntimeError("invalid_transition", "root/a.1: transition start starts from idle"),
    name: "RuntimeError",
    code: "TNX_RUNTIME",
    reason: "invalid_transition",
    message: "root/a.1: transition start starts from idle",
  },
  {
    error: new ClosedError("root/lead.1", "post"),
    name: "ClosedError",
    code: "TNX_CLOSED",
    reason: "closed",
    message: "cannot post: handle root/lead.1 is closed",
  },
  {
    error: new InboxFullError("root/lead.1", 3),
    name: "InboxFullError",
    code: "TNX_INBOX_FULL",
    reason: undefined,
    message: "the inbox of root/lead.1 is full (cap 3); the item was not added",
  },
] as const

describe("agents errors", () => {
  it.each(TABLE)(
    "$name $reason: name, code, reason and message",
    ({ error, name, code, reason, message }) => {
      expect(error.name).toBe(name)
      expect(error.code).toBe(code)
      expect(error.code).toMatch(/^TNX_[A-Z_]+$/)
      expect((error as { reason?: string }).reason).toBe(reason)
      expect(error.message).toBe(message)
      expect(ToolnexusError.isInstance(error)).toBe(true)
      expect(AgentsError.isInstance(error)).toBe(true)
      expect(error).toBeInstanceOf(Error)
    },
  )

  it("each class recognises its own family and subclasses, not its siblings", () => {
    const runtime = new RuntimeError("max_depth", "x")
    const closed = new ClosedError("root/a.1", "wake")
    const full = new InboxFullError("root/a.1", 1)
    expect([
      RuntimeError.isInstance(runtime),
      RuntimeError.isInstance(closed),
      RuntimeError.isInstance(full),
    ]).toEqual([true, true, false])
    expect([ClosedError.isInstance(runtime), ClosedError.isInstance(closed)]).toEqual([false, true])
    expect([InboxFullError.isInstance(full), InboxFullError.isInstance(closed)]).toEqual([true, false])
    expect(closed instanceof RuntimeError).toBe(true)
    expect(runtime instanceof ClosedError).toBe(false)
    // A core error is a toolnexus error, but not an agents one.
    const core = new ToolnexusError("TNX_RUNTIME", "x")
    expect([
      AgentsError.isInstance(core),
      RuntimeError.isInstance(core),
      core instanceof RuntimeError,
    ]).toEqual([false, false, false])
    expect(
      [null, undefined, "RuntimeError", { name: "RuntimeError", code: "TNX_RUNTIME" }].map((v) =>
        RuntimeError.isInstance(v),
      ),
    ).toEqual([false, false, false, false])
  })

  it("recognises errors made by another copy of the package (a duplicate install)", async () => {
    vi.resetModules()
    // A fresh evaluation of the module: new classes, as a second install would have.
    const copy = (await import("./errors.js")) as typeof import("./errors.js")
    expect(copy.RuntimeError).not.toBe(RuntimeError)
    const foreignClosed = new copy.ClosedError("root/a.1", "spawn under root/a.1")
    const foreignFull = new copy.InboxFullError("root/a.1", 2)
    expect(Object.getPrototypeOf(foreignClosed)).not.toBe(ClosedError.prototype)
    expect(ClosedError.isInstance(foreignClosed)).toBe(true)
    expect(RuntimeError.isInstance(foreignClosed)).toBe(true)
    expect(foreignClosed instanceof RuntimeError).toBe(true)
    expect(InboxFullError.isInstance(foreignFull)).toBe(true)
    expect(RuntimeError.isInstance(foreignFull)).toBe(false)
    expect(ToolnexusError.isInstance(foreignFull)).toBe(true)
    expect(copy.RuntimeError.isInstance(new ClosedError("root/b.1", "post"))).toBe(true)
  })
})

it("agents errors answer core's one check, isToolnexusError(e, code)", async () => {
  const { isToolnexusError } = await import("@toolnexus/core")
  for (const row of TABLE) {
    expect(isToolnexusError(row.error)).toBe(true)
    expect(isToolnexusError(row.error, row.code)).toBe(true)
    expect(isToolnexusError(row.error, "TNX_STORE")).toBe(false)
  }
})
