import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { type RunResult, relayAnswer } from "@toolnexus/core"
import { describe, expect, it } from "vitest"
import { hostFixture, useFakeModel } from "./host-fixture.js"

// A store host keeps nothing in memory for a relay run that ended: its toolkit (with the caller's
// tools), its execution, its events and the caller's listeners are all collectable. Checked by
// weak references to what each run's caller handed the host, after a forced collection.

const model = useFakeModel({ reset: true })

/** A full collection now (the flag is set at run time; `gc` comes from a fresh context). */
function collect(): void {
  setFlagsFromString("--expose-gc")
  const gc = runInNewContext("gc") as () => void
  gc()
  gc()
}

describe("a store host after relay runs ended", () => {
  it("holds no run's tools, listeners or execution", async () => {
    const { host } = await hostFixture(model())
    const refs: WeakRef<object>[] = []
    const N = 20
    // Each run: started with a caller's tool, parked on it, answered with the tools again, done.
    async function oneRun(i: number): Promise<void> {
      const parameters = { type: "object", properties: { n: { type: "number" } } }
      const tools = [{ name: "show", description: `run ${i}`, parameters }]
      // The events the run emitted (an execution keeps them for `events({ fromStart })`).
      const onEvent = (ev: object) => void refs.push(new WeakRef(ev))
      const onAnswerEvent = (ev: object) => void refs.push(new WeakRef(ev))
      refs.push(new WeakRef(parameters), new WeakRef(onEvent), new WeakRef(onAnswerEvent))
      model().enqueue(
        { toolCalls: [{ id: `c${i}`, name: "show", arguments: { n: i } }] },
        { text: `done ${i}` },
      )
      await host.start("a", `rc${i}`, "go", { relay: { tools }, onEvent })
      const halted = (await host.result(`rc${i}`)) as RunResult
      expect(halted.status).toBe("pending")
      const answer = relayAnswer(halted.pending!.id, [{ id: `c${i}`, output: "ok" }])
      await host.deliverAnswer(answer, { relay: { tools }, onEvent: onAnswerEvent })
      expect(await host.result(`rc${i}`)).toMatchObject({ status: "done", text: `done ${i}` })
    }
    for (let i = 0; i < N; i++) await oneRun(i)
    // The newest run's last events stay reachable until the next request (seen: its last three,
    // held outside the host's maps); one plain run after them lets the check cover every relay run.
    model().enqueue({ text: "flush" })
    await host.start("a", "flush", "x")
    await host.result("flush")
    collect()
    // Each run's tool schema, two listeners and its events (at least one a call).
    expect(refs.length).toBeGreaterThan(N * 4)
    const kept = refs.filter((ref) => ref.deref() !== undefined).length
    expect(kept).toBe(0)
    await host.close()
  })
})
