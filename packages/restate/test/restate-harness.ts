import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { type AddressInfo, createServer } from "node:net"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const here = dirname(fileURLToPath(import.meta.url))

/** The restate-server binary the npm package installed for this platform. */
function serverBinary(): string {
  const require = createRequire(import.meta.url)
  const launcher = createRequire(require.resolve("@restatedev/restate-server/package.json"))
  return launcher.resolve(`@restatedev/restate-server-${process.platform}-${process.arch}/bin/restate-server`)
}

/** A free loopback port (the kernel's ephemeral range, above 20000 here). */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createServer()
      server.once("error", reject)
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        server.close(() => resolve(port))
      })
    })
    if (port > 20000) return port
  }
}

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  while (Date.now() < deadline) {
    const done = await check().catch((error) => {
      last = error
      return false
    })
    if (done) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`timed out waiting for ${what}${last === undefined ? "" : ` (last error: ${last})`}`)
}

/** A Restate server in a temp base dir, loopback ports, telemetry off. */
export interface RestateServer {
  ingress: string
  admin: string
  stop(): Promise<void>
}

export async function startRestateServer(): Promise<RestateServer> {
  const baseDir = mkdtempSync(join(tmpdir(), "tnx-restate-"))
  const [ingressPort, adminPort, fabricPort] = [await freePort(), await freePort(), await freePort()]
  const child = spawn(
    serverBinary(),
    ["--no-logo", "--listen-mode", "tcp", "--base-dir", baseDir, "--default-num-partitions", "1"],
    {
      env: {
        ...process.env,
        RESTATE_DISABLE_TELEMETRY: "true",
        RESTATE_INGRESS__BIND_ADDRESS: `127.0.0.1:${ingressPort}`,
        RESTATE_ADMIN__BIND_ADDRESS: `127.0.0.1:${adminPort}`,
        RESTATE_BIND_ADDRESS: `127.0.0.1:${fabricPort}`,
        RESTATE_ADVERTISED_ADDRESS: `http://127.0.0.1:${fabricPort}`,
        RESTATE_LOG_FILTER: "warn",
      },
      stdio: ["ignore", "ignore", "pipe"],
    },
  )
  let stderr = ""
  child.stderr?.on("data", (chunk) => {
    stderr = (stderr + chunk).slice(-4000)
  })
  const ingress = `http://127.0.0.1:${ingressPort}`
  const admin = `http://127.0.0.1:${adminPort}`
  try {
    await until(
      async () => (await fetch(`${admin}/health`)).ok && (await fetch(`${ingress}/restate/health`)).ok,
      "the Restate server",
    )
  } catch (error) {
    child.kill("SIGKILL")
    throw new Error(`${(error as Error).message}: ${stderr}`)
  }
  return {
    ingress,
    admin,
    async stop() {
      await stopChild(child)
      rmSync(baseDir, { recursive: true, force: true })
    },
  }
}

function stopChild(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    child.once("exit", () => resolve())
    child.kill(signal)
  })
}

/** A worker process serving the fixture agents; `kill()` is SIGKILL. */
export interface Worker {
  kill(): Promise<void>
  stop(): Promise<void>
}

export async function startWorker(opts: {
  llmUrl: string
  admin: string
  port: number
  logFile: string
}): Promise<Worker> {
  const child = spawn(process.execPath, [join(here, "fixtures", "worker.mjs")], {
    env: {
      ...process.env,
      LLM_URL: opts.llmUrl,
      ADMIN: opts.admin,
      PORT: String(opts.port),
      LOG_FILE: opts.logFile,
    },
    stdio: ["ignore", "pipe", "pipe"],
  })
  let output = ""
  child.stderr?.on("data", (chunk) => {
    output = (output + chunk).slice(-4000)
  })
  if (process.env.TNX_DEBUG) child.stdout?.on("data", (chunk) => process.stderr.write(chunk))
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on("data", (chunk) => {
      output += chunk
      if (output.includes("ready ")) resolve()
    })
    child.once("exit", (code) => reject(new Error(`worker exited (${code}): ${output}`)))
  })
  return { kill: () => stopChild(child, "SIGKILL"), stop: () => stopChild(child) }
}

/** Tool executions the workers logged. */
export function toolLog(logFile: string): { tool: string; key: string; answer?: unknown }[] {
  let text = ""
  try {
    text = readFileSync(logFile, "utf8")
  } catch {
    return []
  }
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line))
}

export function newLogFile(): string {
  const dir = mkdtempSync(join(tmpdir(), "tnx-restate-log-"))
  const file = join(dir, "tools.jsonl")
  writeFileSync(file, "")
  return file
}

export { until }
