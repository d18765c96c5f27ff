#!/usr/bin/env node
// `npm run demo`: installs, builds, then runs apps/quickstart, saying what each step does.
import { pnpm, run, say } from "./steps.mjs"

// The packages need Node 20.19+ (every package's `engines`): say so before pnpm fails obscurely.
const [major, minor] = process.versions.node.split(".").map(Number)
if (major < 20 || (major === 20 && minor < 19)) {
  process.stderr.write(`The demo needs Node.js 20.19 or newer; this is ${process.version}.\n`)
  process.exit(1)
}

say("installing the workspace's dependencies (pnpm, from the lockfile; the first time takes a minute or two)")
let code = await run([...pnpm, "install", "--frozen-lockfile"], undefined, { doing: "installing" })
if (code !== 0) process.stderr.write(`\nThe install failed (exit ${code}); see pnpm's message above.\n`)
if (code === 0) {
  say(
    "building core, agents, durable and the demo (tsup; about a minute the first time, instant when nothing changed)",
  )
  // One line per package as its build starts and finishes; tsup's own output only on a failure.
  code = await run(
    [
      ...pnpm,
      "exec",
      "turbo",
      "run",
      "build",
      "--filter",
      "@toolnexus/app-quickstart...",
      "--output-logs=new-only",
    ],
    undefined,
    { doing: "building", progress: buildProgress },
  )
  if (code !== 0)
    process.stderr.write(`\nThe build failed (exit ${code}); the failing package's log is above.\n`)
}
if (code === 0) {
  say("running the demo: an approval that parks in SQLite and is answered by a second process")
  code = await run([...pnpm, "--filter", "@toolnexus/app-quickstart", "start"], undefined, {
    doing: "running",
  })
}
process.exit(code)

/** Turns turbo's and tsup's lines into one line per package event; undefined hides the line. */
function buildProgress(line) {
  const task = /^(@toolnexus\/[\w-]+):build: (.*)$/.exec(line)
  if (!task) return /^\s*Time:\s/.test(line) ? `   done in ${line.replace(/^\s*Time:\s*/, "")}` : undefined
  const [, name, text] = task
  if (text.startsWith("cache hit")) return `   ${name}: unchanged since the last build`
  if (text.startsWith("cache miss")) return `   ${name}: building`
  const built = /^(ESM|DTS) .*Build success in (\d+)ms/.exec(text)
  if (built) {
    const what = built[1] === "DTS" ? "type declarations" : "JavaScript"
    return `   ${name}: ${what} built in ${(Number(built[2]) / 1000).toFixed(1)} s`
  }
  return undefined
}
