#!/usr/bin/env node
// Follows docs/getting-started.md as a newcomer would, from an empty folder and without a
// model key: the packages are packed (scripts/pack.mjs, the guide's install from a clone),
// the guide's `sh run=project` block runs as written (npm installs the tarballs and the
// registry packages), its files are written out, `tsc --noEmit` checks them against the
// installed packages, its fake-model.ts is started and its URL exported as OPENAI_BASE_URL,
// then each step runs with `npx tsx` and its output is checked for what the guide says it
// prints, and refund.test.ts runs under `tsx --test`.
//
//   node scripts/run-getting-started.mjs [--keep]     (after the packages are built)
//
// better-sqlite3 has no prebuilt binary to download here (CI reaches only the npm registry),
// and compiling it for every run would cost minutes: its install script (prebuild-install)
// is pointed at a local "prebuild" made from the workspace's own build for this Node, which
// is what a user's install downloads from the driver's releases.
import { execFileSync, spawn } from "node:child_process"
import { once } from "node:events"
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { fencedBlocksOf } from "./markdown-blocks.mjs"

const root = resolve(import.meta.dirname, "..")
const guide = join(root, "docs/getting-started.md")
const keep = process.argv.includes("--keep")

/** What each step prints (the guide's comments say the same), in the order a reader runs them. */
const STEPS = [
  // A declined refund first: the tool never runs and the model says so.
  { args: ["ask.ts"], prints: [/^pending$/m, /prompt: 'Refund 25 USD on order A-1001\?'/] },
  {
    args: ["answer.ts", "no"],
    prints: [/^done The refund was declined; nothing was refunded\.$/m],
    after: (project) => rmSync(join(project, "runs.db"), { force: true }),
  },
  { args: ["ask.ts"], prints: [/^pending$/m] },
  {
    args: ["answer.ts"],
    prints: [/^approval: Refund 25 USD on order A-1001\?$/m, /^done The refund is done\.$/m],
  },
  { args: ["answer.ts"], prints: [/^ticket-1001 waits for nothing$/m] },
  {
    args: ["team.ts"],
    prints: [/\[ 'root', 'support\.1', 'billing\.1' \]/, /^The refund is done\.$/m, /root\/support\.1: idle/],
  },
  { args: ["team-park.ts"], prints: [/^pending Refund 25 USD on order A-1001\?$/m] },
  {
    args: ["team-answer.ts"],
    prints: [/^Refund 25 USD on order A-1001\? \(held by ticket-2002\)$/m, /^runtime The refund is done\.$/m],
  },
  // Answered: nothing is listed any more, so the script prints nothing.
  { args: ["team-answer.ts"], prints: [/^$/] },
  {
    args: ["stream.ts"],
    prints: [/→ refund \{"order":"A-1001","amount":25\}/, /← refunded 25 USD/, /\[done, \d+ tokens\]/],
  },
]

const temp = mkdtempSync(join(tmpdir(), "tnx-getting-started-"))
let fake
try {
  const blocks = fencedBlocksOf(readFileSync(guide, "utf8"))
  const setup = blocks.find((block) => block.run === "project")
  if (!setup) throw new Error("the guide has no ```sh run=project block")

  // Only what the guide installs: the docs package's test waits for those builds alone.
  const packed = [...setup.code.matchAll(/tarballs\/toolnexus-([\w-]+)\.tgz/g)].map(
    ([, n]) => `@toolnexus/${n}`,
  )
  execFileSync(process.execPath, [join(root, "scripts/pack.mjs"), ...new Set(packed)], {
    stdio: ["ignore", "ignore", "inherit"],
  })
  const env = { ...process.env, TOOLNEXUS: root, ...localSqlitePrebuild(join(temp, "prebuilds")) }
  const started = Date.now()
  execFileSync("bash", ["-euo", "pipefail", "-c", setup.code], { cwd: temp, env, stdio: "pipe" })
  const folder = /^mkdir (\S+)/m.exec(setup.code)?.[1]
  const project = join(temp, folder ?? ".")
  console.log(`ok  the guide's install, from the tarballs (${((Date.now() - started) / 1000).toFixed(0)} s)`)

  for (const block of blocks) if (block.file) writeFileSync(join(project, block.file), `${block.code}\n`)
  execFileSync("npx", ["tsc", "--noEmit", "-p", "."], { cwd: project, env, stdio: "pipe" })
  console.log("ok  npx tsc --noEmit (the guide's files against the installed packages)")

  const tsx = join(project, "node_modules/.bin/tsx")
  // `node --import tsx` is `npx tsx` in one process, so killing it leaves no child behind.
  fake = spawn(process.execPath, ["--import", "tsx", "fake-model.ts"], {
    cwd: project,
    stdio: ["ignore", "pipe", "inherit"],
  })
  const [first] = await once(fake.stdout, "data")
  const url = /^export OPENAI_BASE_URL=(\S+)$/m.exec(String(first))?.[1]
  if (!url) throw new Error(`fake-model.ts printed ${JSON.stringify(String(first))}, not an export line`)
  const stepEnv = { ...env, OPENAI_BASE_URL: url, OPENAI_API_KEY: "", OPENROUTER_API_KEY: "" }

  for (const step of STEPS) {
    const output = execFileSync(tsx, step.args, { cwd: project, env: stepEnv, encoding: "utf8" })
    for (const pattern of step.prints) {
      if (!pattern.test(output))
        throw new Error(`npx tsx ${step.args.join(" ")} did not print ${pattern}; it printed:\n${output}`)
    }
    step.after?.(project)
    console.log(`ok  npx tsx ${step.args.join(" ")}`)
  }
  execFileSync(tsx, ["--test", "refund.test.ts"], {
    cwd: project,
    env: stepEnv,
    encoding: "utf8",
    stdio: "pipe",
  })
  console.log("ok  npx tsx --test refund.test.ts")
} catch (error) {
  console.error(`docs/getting-started.md: ${error.stdout ?? ""}${error.stderr ?? ""}${error.message}`)
  process.exitCode = 1
} finally {
  fake?.kill()
  if (keep) console.log(`kept ${temp}`)
  else rmSync(temp, { recursive: true, force: true })
}

/**
 * A prebuild-install "download" of the workspace's better-sqlite3 for this Node (the file
 * name its install script looks for), and the variable that makes it look in `dir` first.
 */
function localSqlitePrebuild(dir) {
  const require = createRequire(join(root, "docs/package.json"))
  const pkgDir = realpathSync(resolve(require.resolve("better-sqlite3/package.json"), ".."))
  const { version } = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"))
  mkdirSync(dir, { recursive: true })
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`
  execFileSync("tar", ["-czf", join(dir, name), "-C", pkgDir, "build/Release/better_sqlite3.node"])
  writeFileSync(join(dir, "SOURCE"), `built from ${pkgDir} for Node ${process.version}\n`)
  return { npm_config_better_sqlite3_local_prebuilds: dir }
}
