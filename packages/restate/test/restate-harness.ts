import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { type AddressInfo, createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { until } from "@toolnexus/agents/engine-testing"

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
        // A killed worker's invocations wait out the server's retry backoff (by default 500 ms
        // doubling to 1 min): a replacement that takes 16 s to start under load is first tried
        // at 31.5 s, one that takes 32 s at 63.5 s. The tests' recovery is bounded by the
        // replacement's start, not by where the doubling happens to be.
        RESTATE_DEFAULT_RETRY_POLICY__INITIAL_INTERVAL: "100ms",
        RESTATE_DEFAULT_RETRY_POLICY__MAX_INTERVAL: "1s",
        RESTATE_DEFAULT_RETRY_POLICY__MAX_ATTEMPTS: "600",
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
