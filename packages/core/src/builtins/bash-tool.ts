import { spawn } from "node:child_process"
import { type BuiltinSpec, fail, ok } from "./builtin-env.js"

/**
 * @internal `bash`: `sh -c` in the root (or `workdir`), in its own process group, so a timeout or
 * an abort kills everything the command started, not only the shell.
 */
export const bashTool: BuiltinSpec = {
  name: "bash",
  description: "Run a shell command and return its combined stdout+stderr. Non-zero exit is an error.",
  inputSchema: {
    type: "object",
    properties: {
      command: { type: "string", description: "The shell command to run" },
      workdir: { type: "string", description: "Working directory (default: process cwd)" },
      timeout: { type: "number", description: "Timeout in milliseconds (default 60000)" },
      description: { type: "string", description: "Human-readable description of the command" },
    },
    required: ["command"],
    additionalProperties: false,
  },
  paths: (args) => (typeof args.workdir === "string" && args.workdir !== "" ? [args.workdir] : []),
  destructive: () => true,
  run(args, { env, resolve, signal }) {
    const command = String(args.command ?? "")
    if (!command) return Promise.resolve(fail("bash: command is required"))
    const cwd = typeof args.workdir === "string" && args.workdir !== "" ? resolve(args.workdir) : env.root
    const timeout = typeof args.timeout === "number" && args.timeout > 0 ? args.timeout : 60_000
    // Collected up to just past the cap: a command printing gigabytes must not fill the heap.
    const keep = env.maxOutputChars + 1
    return new Promise((settle) => {
      const child = spawn("sh", ["-c", command], { cwd, detached: true, stdio: ["ignore", "pipe", "pipe"] })
      let out = ""
      let timedOut = false
      const killGroup = () => {
        try {
          if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL")
        } catch {
          // Already gone.
        }
      }
      const timer = setTimeout(() => {
        timedOut = true
        killGroup()
      }, timeout)
      const onAbort = () => killGroup()
      signal?.addEventListener("abort", onAbort, { once: true })
      const collect = (chunk: Buffer) => {
        if (out.length < keep) out += chunk.toString("utf8").slice(0, keep - out.length)
      }
      child.stdout?.on("data", collect)
      child.stderr?.on("data", collect)
      const done = () => {
        clearTimeout(timer)
        signal?.removeEventListener("abort", onAbort)
      }
      child.on("error", (error) => {
        done()
        settle(fail(`bash: ${error.message}`))
      })
      child.on("close", (code) => {
        done()
        if (timedOut)
          return settle(fail(`bash: command timed out after ${timeout}ms\n${out}`, { timedOut: true }))
        if (signal?.aborted) return settle(fail(`bash: aborted\n${out}`, { aborted: true }))
        if (code !== 0)
          return settle(fail(`${out}\nbash: command exited with code ${code}`, { exitCode: code }))
        settle(ok(out, { exitCode: code }))
      })
    })
  },
}
