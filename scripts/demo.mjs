#!/usr/bin/env node
// `npm run demo`: installs, builds, then runs apps/quickstart, saying what each step does.
import { pnpm, run, say } from "./steps.mjs"

say("installing the workspace's dependencies (pnpm, from the lockfile; the first time takes a minute or two)")
let code = await run([...pnpm, "install", "--frozen-lockfile"])
if (code === 0) {
  say(
    "building the packages and the demo (tsup; about a minute the first time, instant when nothing changed)",
  )
  code = await run([
    ...pnpm,
    "exec",
    "turbo",
    "run",
    "build",
    "--filter",
    "@toolnexus/app-quickstart...",
    "--output-logs=errors-only",
  ])
}
if (code === 0) {
  say("running the demo: an approval that parks in SQLite and is answered by a second process")
  code = await run([...pnpm, "--filter", "@toolnexus/app-quickstart", "start"])
}
process.exit(code)
