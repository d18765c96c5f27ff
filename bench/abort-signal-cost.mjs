// What a store host's per-execution AbortController costs the chat row on its own: `n` of them
// made and their signal read (what `execute` did per run before core's `RunAbort`), or one
// signal given `n` listeners added and removed (what undici does per LLM request of a run with
// a signal); `run-abort` and `run-abort-listen` are the same two for core's `RunAbort`, which a
// store host makes per execution instead. Count it with callgrind at two sizes and take the
// difference, e.g.
//
//   valgrind --tool=callgrind --callgrind-out-file=/dev/null node --single-threaded abort-signal-cost.mjs create 20000   # and 40000
//   valgrind --tool=callgrind --callgrind-out-file=/dev/null node --single-threaded abort-signal-cost.mjs listen 20000   # and 40000
const [what = "create", nArg = "20000"] = process.argv.slice(2)
const n = Number(nArg)
let kept
if (what === "create") {
  for (let i = 0; i < n; i++) {
    const controller = new AbortController()
    kept = controller.signal
    if (kept.aborted) throw new Error("aborted")
  }
} else if (what === "listen") {
  const signal = new AbortController().signal
  for (let i = 0; i < n; i++) {
    const listener = () => i
    signal.addEventListener("abort", listener, { once: true })
    signal.removeEventListener("abort", listener)
  }
} else {
  const { RunAbort } = await import("@toolnexus/core/engine")
  if (what === "run-abort") {
    for (let i = 0; i < n; i++) {
      kept = new RunAbort()
      if (kept.aborted) throw new Error("aborted")
    }
  } else {
    const abort = new RunAbort()
    for (let i = 0; i < n; i++) {
      const listener = () => i
      abort.addEventListener("abort", listener, { once: true })
      abort.removeEventListener("abort", listener)
    }
  }
}
