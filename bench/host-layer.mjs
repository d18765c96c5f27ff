// The store host's own cost per turn (DESIGN §17, under the chat handler): `turns` turns (after
// 100 warm-up turns) of `client.ask` on a durable memory store (`ask`), or of the same turn as
// a store host run, `host.start` then `host.result` (`host`), against the fake LLM endpoint in
// its own process. Count it with callgrind at two lengths and take the difference, e.g.
//
//   valgrind --tool=callgrind --callgrind-out-file=/dev/null node --single-threaded host-layer.mjs host 700
//
// (`--dump-instr=no --callgrind-out-file=<file>` and callgrind_annotate split it by V8 function:
// compiler, GC, builtins.) With --expose-gc it prints the heap each turn leaves behind.
const [variant = "host", turnsArg = "700"] = process.argv.slice(2)
const turns = Number(turnsArg)
const { createClient, createToolkit, hostAgent } = await import("@toolnexus/core")
const { createMemoryStore, createStoreHost } = await import("@toolnexus/durable")
const { fakeModel } = await import("./ui-variants.mjs")
const model = await fakeModel()
const store = createMemoryStore()
const client = createClient({
  baseUrl: model.baseUrl,
  style: "openai",
  model: "bench",
  apiKey: "sk-bench",
  store,
})
const toolkit = await createToolkit({})
const host = createStoreHost({ store, agents: [hostAgent({ name: "chat", client, toolkit })] })
let seq = 0
const turn =
  variant === "ask"
    ? () => client.ask("hi", { id: `a-${++seq}`, toolkit, onEvent: () => {} })
    : async () => {
        const id = `h-${++seq}`
        await host.start("chat", id, "hi", { onEvent: () => {} })
        await host.result(id)
      }
for (let i = 0; i < 100; i++) await turn()
globalThis.gc?.()
const before = process.memoryUsage().heapUsed
for (let i = 0; i < turns; i++) await turn()
if (globalThis.gc) {
  await new Promise((resolve) => setImmediate(resolve))
  globalThis.gc()
  console.log(
    `${variant}: ${((process.memoryUsage().heapUsed - before) / turns).toFixed(0)} heap bytes kept per turn`,
  )
}
await host.close()
model.child.disconnect()
