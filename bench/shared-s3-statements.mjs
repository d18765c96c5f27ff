// The shared bench's S3 resume (`<bench copy>/adapters/ours.mjs`, its mock server), with every
// SQLite statement the store runs listed from the resume's start to its first LLM request:
// the cold resume (`run-0`, first in the process) and the second (`run-1`). better-sqlite3's
// Statement methods are wrapped in the copy the durable package loads; undici's
// `undici:request:create` channel marks the request.
//   TN_OURS=<checkout> node shared-s3-statements.mjs --bench <bench copy>
import { spawn } from "node:child_process"
import { subscribe } from "node:diagnostics_channel"
import { mkdtempSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"

const { values } = parseArgs({ options: { bench: { type: "string" } } })
const req = createRequire(join(process.env.TN_OURS, "packages/durable/package.json"))
const Database = req("better-sqlite3")
const log = []
let on = false
const probe = new Database(":memory:").prepare("select 1")
const Statement = Object.getPrototypeOf(probe)
for (const m of ["run", "get", "all", "iterate"]) {
  const orig = Statement[m]
  Statement[m] = function (...args) {
    if (on) log.push(`${m}: ${this.source.replace(/\s+/g, " ").slice(0, 110)}`)
    return orig.apply(this, args)
  }
}
const origExec = Database.prototype.exec
Database.prototype.exec = function (sql) {
  if (on) log.push(`exec: ${sql.slice(0, 110)}`)
  return origExec.call(this, sql)
}
subscribe("undici:request:create", () => {
  if (on) {
    log.push("— first LLM request —")
    on = false
  }
})
const mock = spawn(process.execPath, [join(values.bench, "lib/mock-server.mjs"), "--port", "0"], {
  stdio: ["pipe", "pipe", "inherit"],
})
const origin = await new Promise((r) =>
  mock.stdout.on("data", (d) => {
    const m = /LISTENING (\d+)/.exec(String(d))
    if (m) r(`http://127.0.0.1:${m[1]}`)
  }),
)
const env = { baseURL: `${origin}/v1`, origin, model: "mock", apiKey: "sk-bench-not-a-key" }
const adapter = await import(join(values.bench, "adapters/ours.mjs"))
const dbPath = join(mkdtempSync(join(tmpdir(), "s3st-")), "runs.db")
const a = await adapter.s3Setup1(env, { dbPath })
for (const id of ["warm-0", "run-0", "run-1"]) await a.park(id)
await a.close()
const b = await adapter.s3Setup2(env, { dbPath })
for (const id of ["run-0", "run-1"]) {
  log.length = 0
  on = true
  await b.resume(id)
  on = false
  console.log(
    `${id === "run-0" ? "cold" : "second"} resume (${id}): ${log.filter((l) => !l.startsWith("—")).length} statements before/after marks`,
  )
  for (const l of log) console.log(`  ${l}`)
}
await b.close()
mock.kill()
