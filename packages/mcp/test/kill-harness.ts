import { type ChildProcess, spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import type { Request } from "@toolnexus/core"

/** A started child and the first line it printed (a URL, or a worker's JSON result). */
export interface Started {
  line: string
  child: ChildProcess
}

/**
 * The child processes of one SIGKILL test file (server-sigkill, mrtr-sigkill, tasks-sigkill):
 * each prints one line on stdout once it is ready (its stderr goes to the test's), `kill` is a
 * SIGKILL that waits until the process is gone, and `killAll` (the file's afterAll) ends any
 * still running.
 */
export function childProcesses() {
  const children: ChildProcess[] = []
  return {
    /** Runs `node script ...args`; resolves with its first line, rejects if it exits before. */
    start(script: string, ...args: string[]): Promise<Started> {
      const child = spawn(process.execPath, [script, ...args], { stdio: ["ignore", "pipe", "inherit"] })
      children.push(child)
      return new Promise((resolve, reject) => {
        let out = ""
        child.stdout?.on("data", (chunk: Buffer) => {
          out += chunk.toString()
          const end = out.indexOf("\n")
          if (end >= 0) resolve({ line: out.slice(0, end), child })
        })
        child.on("exit", (code, signal) =>
          reject(new Error(`${script} exited (${code ?? signal}) before printing a line`)),
        )
      })
    },
    /** SIGKILLs a child and resolves once it is gone, with its exit code (null when killed). */
    kill(child: ChildProcess): Promise<number | null> {
      const gone = this.exited(child)
      child.kill("SIGKILL")
      return gone
    },
    /** Resolves with a child's exit code once it has exited (a finished worker closes its store first). */
    exited(child: ChildProcess): Promise<number | null> {
      if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode)
      return new Promise((resolve) => child.once("exit", (code) => resolve(code)))
    },
    killAll(): void {
      for (const child of children.splice(0))
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
    },
  }
}

/** The one line fixtures/mrtr-kill-worker.mjs prints: its step's result or error. */
export interface WorkerLine {
  pid: number
  result?: { status: string; text: string; pending?: Request; delivered?: string }
  error?: { name: string; code: string; message: string }
}

const WORKER = fileURLToPath(new URL("./fixtures/mrtr-kill-worker.mjs", import.meta.url))

/**
 * Starts one step of fixtures/mrtr-kill-worker.mjs (`park`, `answer` or `sweep`, on the model at
 * `llmUrl`); resolves with its line (a parked worker stays alive until killed).
 */
export async function workerStep(
  processes: ReturnType<typeof childProcesses>,
  llmUrl: string,
  job: Record<string, unknown>,
): Promise<{ line: WorkerLine; child: ChildProcess }> {
  const { line, child } = await processes.start(WORKER, JSON.stringify({ llmUrl: `${llmUrl}/v1`, ...job }))
  return { line: JSON.parse(line) as WorkerLine, child }
}
