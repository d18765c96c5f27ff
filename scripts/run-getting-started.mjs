#!/usr/bin/env node
// Runs docs/getting-started.md as a newcomer would, without a model key: its files are
// written out (types stripped by the TypeScript compiler), its fake-model.ts is started and
// its URL exported as OPENAI_BASE_URL, then ask → answer → team → stream run in order and
// refund.test.ts runs under node --test. Each step's output is checked for what the guide
// says it prints. Type-checking the same files is check-snippets.mjs's job.
//
//   node scripts/run-getting-started.mjs       (after the packages are built)
import { execFileSync, spawn } from "node:child_process"
import { once } from "node:events"
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import ts from "typescript"
import { blocksOf } from "./markdown-blocks.mjs"

const root = resolve(import.meta.dirname, "..")
const guide = join(root, "docs/getting-started.md")
// Inside docs/, so the guide's imports resolve to the docs package's dependencies.
const dir = join(root, "docs/.getting-started")

/** What each step must print (the guide's comments say the same). */
const STEPS = [
  { file: "ask.js", prints: [/^pending$/m, /prompt: 'Refund 25 USD on order A-1001\?'/] },
  {
    file: "answer.js",
    prints: [/^approval: Refund 25 USD on order A-1001\?$/m, /^done The refund is done\.$/m],
  },
  { file: "answer.js", prints: [/^ticket-1001 waits for nothing$/m] },
  {
    file: "team.js",
    prints: [/\[ 'root', 'support\.1', 'billing\.1' \]/, /^The refund is done\.$/m, /root\/support\.1: idle/],
  },
  {
    file: "stream.js",
    prints: [/→ refund \{"order":"A-1001","amount":25\}/, /← refunded 25 USD/, /\[done, \d+ tokens\]/],
  },
]

rmSync(dir, { recursive: true, force: true })
mkdirSync(dir, { recursive: true })
let fake
try {
  writeFileSync(join(dir, "package.json"), '{ "type": "module" }\n')
  for (const block of blocksOf(readFileSync(guide, "utf8"))) {
    if (!block.file) continue
    const { outputText } = ts.transpileModule(block.code, {
      compilerOptions: {
        module: ts.ModuleKind.ESNext,
        target: ts.ScriptTarget.ES2022,
        verbatimModuleSyntax: false,
      },
    })
    // `./tools.js` in the guide names tools.ts; the transpiled files sit side by side as .js.
    writeFileSync(join(dir, block.file.replace(/\.ts$/, ".js")), outputText)
  }

  fake = spawn(process.execPath, ["fake-model.js"], { cwd: dir, stdio: ["ignore", "pipe", "inherit"] })
  const [first] = await once(fake.stdout, "data")
  const url = /^export OPENAI_BASE_URL=(\S+)$/m.exec(String(first))?.[1]
  if (!url) throw new Error(`fake-model.ts printed ${JSON.stringify(String(first))}, not an export line`)
  const env = { ...process.env, OPENAI_BASE_URL: url, OPENAI_API_KEY: "", OPENROUTER_API_KEY: "" }

  for (const step of STEPS) {
    const output = execFileSync(process.execPath, [step.file], { cwd: dir, env, encoding: "utf8" })
    for (const pattern of step.prints) {
      if (!pattern.test(output))
        throw new Error(`${step.file} did not print ${pattern}; it printed:\n${output}`)
    }
    console.log(`ok  ${step.file}`)
  }
  execFileSync(process.execPath, ["--test", "refund.test.js"], {
    cwd: dir,
    env,
    encoding: "utf8",
    stdio: "pipe",
  })
  console.log("ok  refund.test.js (node --test)")
} catch (error) {
  console.error(`docs/getting-started.md: ${error.stdout ?? ""}${error.stderr ?? ""}${error.message}`)
  process.exitCode = 1
} finally {
  fake?.kill()
  rmSync(dir, { recursive: true, force: true })
}
