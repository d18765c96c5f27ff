#!/usr/bin/env node
// The `toolnexus` command. `--help` is answered before anything else loads: stores and their
// drivers are imported only by the command that needs them.
import { USAGE } from "./args.js"

const argv = process.argv.slice(2)
if (argv.length === 0 || argv.includes("--help") || argv.includes("-h") || argv[0] === "help") {
  process.stdout.write(USAGE)
} else {
  const { runCli } = await import("./run-cli.js")
  process.exitCode = await runCli(argv, {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    cwd: process.cwd(),
  })
}
