import v8 from "node:v8"
const ns = () => { const s = v8.getHeapSpaceStatistics(); const g = (n) => s.find((x) => x.space_name === n).space_used_size; return [g("new_space"), g("old_space"), g("code_space")].map((x) => (x / 1024).toFixed(0) + "K").join(" ") }
const al = () => v8.getHeapStatistics().total_allocated_bytes ?? 0
console.log("start", ns())
await import("better-sqlite3"); console.log("bsqlite", ns())
await import("undici"); console.log("undici", ns())
await import("@toolnexus/core"); console.log("core", ns())
await import("@toolnexus/durable"); console.log("durable", ns())
await import("@toolnexus/durable/sqlite"); console.log("sqlite", ns())
