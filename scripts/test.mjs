#!/usr/bin/env node
// `npm test`: installs the workspace, runs every package's and app's tests through turbo, and
// ends with one total. Each step says what it does; turbo's output streams through unchanged and
// is read on the way for vitest's summary lines ("Tests  12 passed | 1 skipped (13)"), so the
// last lines are a table per workspace and one "total: N passed, N failed, N skipped" line.
// Arguments after `--` go to turbo (e.g. `npm test -- --filter @toolnexus/core`).
import { pnpm, run, say } from "./steps.mjs"

const extra = process.argv.slice(2)

// Colour codes, in case a runner colours its output even through a pipe.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching the ESC character is the point
const ANSI = /\u001b\[[0-9;]*m/g
const COUNTS = ["passed", "failed", "skipped", "todo"]

/** Per workspace (turbo's `name:test:` prefix), vitest's test counts; each step of the docs guide's run counts as one. */
const byWorkspace = new Map()

function readLine(raw) {
  const line = raw.replace(ANSI, "")
  const prefixed = /^(\S+?):test:\s?(.*)$/.exec(line)
  if (!prefixed) return
  const [, workspace, text] = prefixed
  // The docs workspace checks the getting-started guide step by step: "ok  <step>" each.
  if (/^ok {2}\S/.test(text) || /^docs\/getting-started\.md: /.test(text)) {
    const counts = byWorkspace.get(workspace) ?? Object.fromEntries(COUNTS.map((word) => [word, 0]))
    counts[text.startsWith("ok") ? "passed" : "failed"] += 1
    byWorkspace.set(workspace, counts)
    return
  }
  const summary = /^\s*Tests\s+(.+)\((\d+)\)\s*$/.exec(text)
  if (!summary) return
  const counts = Object.fromEntries(COUNTS.map((word) => [word, 0]))
  for (const part of summary[1].split("|")) {
    const match = /(\d+)\s+(passed|failed|skipped|todo)/.exec(part)
    if (match) counts[match[2]] += Number(match[1])
  }
  byWorkspace.set(workspace, counts)
}

say("installing the workspace's dependencies (pnpm, from the lockfile)")
const installed = await run([...pnpm, "install", "--frozen-lockfile"], undefined, { doing: "installing" })
if (installed !== 0) {
  process.stdout.write(`\nThe install failed (exit ${installed}); no test ran.\n`)
  process.exit(installed)
}

say(
  extra.length
    ? `building, then running the tests turbo selects with ${extra.join(" ")}`
    : "building every package, then running every package's and app's tests (turbo)",
)
const tested = await run([...pnpm, "exec", "turbo", "run", "test", ...extra], readLine, {
  doing: "building and testing",
})

say("test totals per workspace")
const total = Object.fromEntries(COUNTS.map((word) => [word, 0]))
const width = Math.max(10, ...[...byWorkspace.keys()].map((name) => name.length))
for (const [workspace, counts] of [...byWorkspace].sort(([a], [b]) => a.localeCompare(b))) {
  for (const word of COUNTS) total[word] += counts[word]
  const parts = COUNTS.filter((word) => word === "passed" || counts[word] > 0).map((w) => `${counts[w]} ${w}`)
  process.stdout.write(`${workspace.padEnd(width)}  ${parts.join(", ")}\n`)
}
if (tested !== 0 && total.failed === 0) {
  process.stdout.write(
    `\nturbo exited ${tested} without a failed test: a build or a test file failed to run (see above).\n`,
  )
}
process.stdout.write(`\ntotal: ${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped\n`)
process.exit(tested)
