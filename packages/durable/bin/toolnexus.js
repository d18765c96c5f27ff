#!/usr/bin/env node
// The `toolnexus` command's installed entry. It is a checked-in file rather than dist/cli/main.js
// itself so that installing the workspace before its first build can link the command (pnpm
// warns for every project otherwise); the command is dist/cli/main.js.
const main = new URL("../dist/cli/main.js", import.meta.url)
try {
  await import(main.href)
} catch (error) {
  // Only the entry itself missing means "not built"; anything else is the command's own error.
  if (error?.code !== "ERR_MODULE_NOT_FOUND" || !String(error.message).includes("dist/cli/main.js"))
    throw error
  process.stderr.write(`toolnexus: ${main.pathname} is missing; build @toolnexus/durable first\n`)
  process.exitCode = 1
}
