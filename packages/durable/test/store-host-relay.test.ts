import {
  type Client,
  type Message,
  type RunResult,
  defineTool,
  hostAgent,
  isToolnexusError,
  relayAnswer,
} from "@toolnexus/core"
import { engineRunOptions } from "@toolnexus/core/engine"
import { describe, expect, it } from "vitest"
import { createMemoryStore, createStoreHost } from "../src/index.js"
import { hostFixture, useFakeModel } from "./host-fixture.js"

// HostStartOptions.relay and .signal (§17, a contract extension): a caller's tools, history,
// output schema and deadline reach the run of this call only.

const model = useFakeModel({ reset: true })

async function setup() {
  const add = defineTool({
    name: "add",
    description: "adds",
    inputSchema: { type: "object", properties: {} },
    run: () => "3",
  })
  const { store, host } = await hostFixture(model(), { tools: [add] })
  return { store, host }
}

const show = { name: "show", description: "shows a value", parameters: { type: "object", properties: {} } }

describe("RunHost.start/deliverAnswer with relay on createStoreHost", () => {
  it("offers the caller's tools beside the agent's, after its history; halts on them; resumes with them", async () => {
    const { store, host } = await setup()
    model().enqueue({ toolCalls: [{ id: "c1", name: "show", arguments: {} }] }, (req) => ({
      text: `saw ${req.toolResults[0]?.content}; tools ${req.toolNames?.join(",")}`,
    }))
    const history: Message[] = [
      { role: "user", content: "earlier" },
      { role: "assistant", content: "before" },
    ]
    const expiresAt = new Date(Date.now() + 60_000).toISOString()
    await host.start("a", "r1", "now", { relay: { tools: [show], history, expiresAt, stream: false } })
    const halted = (await host.result("r1")) as RunResult
    expect(halted.status).toBe("pending")
    expect(model().requests[0]?.toolNames?.sort()).toEqual(["add", "show"])
    expect(model().requests[0]?.stream).toBe(false)
    expect((await store.get("r1"))?.slice(0, 3)).toEqual([...history, { role: "user", content: "now" }])
    // The caller's deadline is the request's, judged by the claim.
    expect((await host.findRequest(halted.pending!.id))?.request.expiresAt).toBe(expiresAt)

    // The resume needs the caller's tools again: they are this call's, not the agent's.
    const answer = relayAnswer(halted.pending!.id, [{ id: "c1", output: "X" }])
    await host.deliverAnswer(answer, { relay: { tools: [show] } })
    const done = (await host.result("r1")) as RunResult
    expect(done.text).toBe("saw X; tools add,show")
    // The agent itself keeps its own toolkit only.
    model().enqueue((req) => ({ text: req.toolNames?.join(",") ?? "" }))
    await host.send("r1", "again")
    expect(((await host.result("r1")) as RunResult).text).toBe("add")
    await host.close()
  })

  it("refuses a bad tool before anything is recorded, history on a resume, and a runtime agent's relay", async () => {
    const { host } = await setup()
    const refused = host.start("a", "r2", "hi", { relay: { tools: [{ name: "has space" }] } })
    await expect(refused).rejects.toThrow(/relay tools: /)
    await expect(host.transcript("r2")).resolves.toBeUndefined()
    await expect(host.send("r2", "hi", { relay: { history: [] } })).rejects.toThrow(/start only/)
    const tree = createStoreHost({
      store: createMemoryStore(),
      agents: [hostAgent({ name: "t", runtime: { registry: {} as never, root: "x" } })],
      sweepEveryMs: false,
    })
    const unsupported = await tree
      .start("t", "r3", "hi", { relay: { tools: [show] } })
      .catch((e: unknown) => e)
    expect(isToolnexusError(unsupported, "TNX_HOST_UNSUPPORTED")).toBe(true)
    await tree.close()
    await host.close()
  })

  it("signal aborts the call's execution; the run's last saved state stays answerable", async () => {
    const { host } = await setup()
    model().enqueue(
      { toolCalls: [{ id: "c1", name: "show", arguments: {} }] },
      { text: "late", delayMs: 5_000 },
    )
    await host.start("a", "r4", "go", { relay: { tools: [show] } })
    const halted = (await host.result("r4")) as RunResult
    const controller = new AbortController()
    const answer = relayAnswer(halted.pending!.id, [{ id: "c1", output: "X" }])
    const delivering = host.deliverAnswer(answer, { relay: { tools: [show] }, signal: controller.signal })
    await expect.poll(() => model().requests.length).toBe(2)
    controller.abort()
    await expect(delivering).rejects.toThrow()
    // The claim was released with the answer kept: the same results resume the run.
    model().enqueue({ text: "done" })
    await host.deliverAnswer(answer, { relay: { tools: [show] } })
    expect(((await host.result("r4")) as RunResult).text).toBe("done")
    await host.close()
  })
})

describe("RunHost.start with a signal on createStoreHost", () => {
  it("a run that ended as its caller hung up is settled, so result() does not wait forever (regression)", async () => {
    const store = createMemoryStore()
    const controller = new AbortController()
    const done = { status: "done", text: "ok", messages: [], usage: {} } as unknown as RunResult
    // The caller hangs up while the run returns its result.
    const client = {
      conversationStore: () => store,
      ask: async () => {
        controller.abort()
        return done
      },
    } as unknown as Client
    const host = createStoreHost({ store, agents: [hostAgent({ name: "a", client })], sweepEveryMs: false })
    await host.start("a", "r5", "hi", { signal: controller.signal })
    const result = (await host.result("r5", { timeoutMs: 2_000 })) as RunResult
    expect(result.text).toBe("ok")
    await host.close()
  })
})

describe("an engine connection refuses relay", () => {
  it("with HostUnsupportedError naming the host and the call", () => {
    expect(() => engineRunOptions("connectDbos", "start", { relay: {} })).toThrow(
      /connectDbos.*start with relay/,
    )
    expect(() => engineRunOptions("connectDbos", "start", {})).not.toThrow()
  })
})
