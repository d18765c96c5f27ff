import { createRequire } from "node:module"
const req = createRequire(new URL("../packages/durable/package.json", import.meta.url))
const D = req("better-sqlite3")
const log = (...a) => process.stderr.write(a.join(" ") + "\n")
const prep = D.prototype.prepare
D.prototype.prepare = function (src) { const st = prep.call(this, src); log("PREPARE", src.replace(/\s+/g, " ").slice(0, 110)); for (const m of ["run", "get", "all"]) { const f = st[m]; st[m] = function (...a) { log("  ", m.toUpperCase(), src.replace(/\s+/g, " ").slice(0, 90)); return f.apply(this, a) } } return st }
const ex = D.prototype.exec; D.prototype.exec = function (s) { log("EXEC", s.slice(0, 80)); return ex.call(this, s) }
const pr = D.prototype.pragma; D.prototype.pragma = function (s, o) { log("PRAGMA", s); return pr.call(this, s, o) }
await import("./cold-resume-child.mjs")
