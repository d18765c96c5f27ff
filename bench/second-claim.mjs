// The second claim in a process, counted alone (issue 38, session 20): three runs parked on a
// SqliteStore, the first claimed, then a mark, the second claimed, a mark. Under callgrind with
// `--dump-before=kill` each mark dumps the counts so far, so the second dump (`<out>.2-01` with
// `--separate-threads=yes`: the main thread) is the second claim alone. No timer or I/O falls
// in that window, so it repeats to within ~0.5 % (the whole second-resume window does not).
//   valgrind --tool=callgrind --dump-before=kill --separate-threads=yes --callgrind-out-file=/tmp/c2.out \
//     node --single-threaded second-claim.mjs /tmp/c2.db     # a fresh path each run; then `totals` of /tmp/c2.out.2-01
import { SqliteStore } from "@toolnexus/durable/sqlite"

const mark = () => process.kill(process.pid, 0)
const store = new SqliteStore({ path: process.argv[2] })
const messages = [
  { role: "user", content: "hi" },
  { role: "assistant", content: "", toolCalls: [{ id: "t1", name: "lookup", arguments: "{}" }] },
]
for (const id of ["a", "b", "c"]) {
  const data = { callId: "t1", tool: "lookup", args: {} }
  await store.save(id, messages, { pending: { id: `req-${id}`, kind: "approval", prompt: "approve?", data } })
}
await store.claimAnswer("a", { id: "req-a", ok: true })
mark()
await store.claimAnswer("b", { id: "req-b", ok: true })
mark()
process.exit(0)
