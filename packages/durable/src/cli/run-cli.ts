import {
  type Answer,
  type AnswerDecision,
  type PendingEntry,
  type RunResult,
  isExpired,
  UnknownRequestError,
  isToolnexusError,
} from "@toolnexus/core"
import type { StoreHost } from "../host/store-host.js"
import { type CliCommand, USAGE, UsageError, parseCommand } from "./args.js"
import { describeDecision, formatEntry, formatFailed, formatTable } from "./format.js"
import { type CliTarget, openTarget } from "./open-target.js"

/** @internal Where the command writes, and what it reads from its process. */
export interface CliIo {
  stdout: { write(text: string): unknown }
  stderr: { write(text: string): unknown }
  env: Record<string, string | undefined>
  cwd: string
}

/** Exit codes: each refusal an operator may script around has its own. */
const EXIT = { ok: 0, failed: 1, usage: 2, unknown: 3, conflict: 4, expired: 5 } as const

/**
 * @internal Runs `toolnexus pending …` and returns its exit code: the result on stdout (a table,
 * or JSON with `--json`), a refusal or failure as one line on stderr.
 */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  let cli: CliCommand
  try {
    cli = parseCommand(argv, io.env)
  } catch (error) {
    io.stderr.write(`toolnexus: ${(error as Error).message}\n${USAGE.split("\n")[0]}\n`)
    return EXIT.usage
  }
  const print = (text: string) => io.stdout.write(text.endsWith("\n") ? text : `${text}\n`)
  let target: CliTarget | undefined
  try {
    target = await openTarget(cli, io.cwd)
    await perform(cli, target, print)
    return EXIT.ok
  } catch (error) {
    const { code, line, json } = explain(error)
    if (cli.json) print(JSON.stringify({ error: json }))
    io.stderr.write(`toolnexus: ${line}\n`)
    return code
  } finally {
    await target?.close().catch(() => {})
  }
}

async function perform(cli: CliCommand, target: CliTarget, print: (text: string) => void): Promise<void> {
  const { host } = target
  const id = cli.id as string
  switch (cli.command) {
    case "list": {
      if (cli.failed) {
        const failed = await (host as StoreHost).listFailed({ limit: cli.limit ?? 100 })
        if (cli.json) return print(JSON.stringify({ requests: failed }))
        return print(failed.length === 0 ? "no failed requests" : formatFailed(failed, Date.now()))
      }
      const entries = await host.listPending({
        limit: cli.limit ?? 100,
        ...(cli.kind !== undefined ? { kind: cli.kind } : {}),
      })
      if (cli.json) return print(JSON.stringify({ requests: entries.map(withExpiry) }))
      return print(entries.length === 0 ? "no open requests" : formatTable(entries, Date.now()))
    }
    case "show": {
      const entry = await host.findRequest(id)
      if (entry) return print(cli.json ? JSON.stringify(withExpiry(entry)) : formatEntry(entry, Date.now()))
      const failed = target.engine
        ? undefined
        : (await (host as StoreHost).listFailed()).find((entry) => entry.request.id === id)
      if (failed) return print(cli.json ? JSON.stringify(failed) : formatEntry(failed, Date.now()))
      const decision = await host.getDecision(id)
      if (!decision) throw new UnknownRequestError(id, "no run waits on it and no decision is recorded")
      return print(
        cli.json
          ? JSON.stringify({ id, decision })
          : `request ${id} is decided: ${describeDecision(decision)}`,
      )
    }
    case "approve":
    case "decline": {
      const answer: Answer = { id, ok: cli.command === "approve" }
      if (cli.reason !== undefined) answer.reason = cli.reason
      if (cli.data !== undefined) answer.data = cli.data as Answer["data"]
      const delivered = await host.deliverAnswer(answer)
      const status = target.applies && !target.engine ? await statusOf(host, delivered.runId) : undefined
      return report(cli, target, print, delivered.runId, delivered.decision, status)
    }
    case "retry": {
      if (target.engine) throw new UsageError("an engine re-drives its runs itself; retry works with --store")
      const delivered = await (host as StoreHost).retry(id)
      const status = target.applies ? await statusOf(host, delivered.runId) : undefined
      return report(cli, target, print, delivered.runId, delivered.decision, status)
    }
  }
}

function report(
  cli: CliCommand,
  target: CliTarget,
  print: (text: string) => void,
  runId: string,
  decision: AnswerDecision,
  status: string | undefined,
): void {
  const applied = target.applies
  const what = `${describeDecision(decision)}: request ${cli.id} of run ${runId}`
  if (cli.json)
    print(
      JSON.stringify({ id: cli.id, runId, decision, applied, ...(status !== undefined ? { status } : {}) }),
    )
  else if (target.engine) print(`${what}; the engine goes on with the run`)
  else if (applied) print(`${what}; the run is ${status ?? "going on"}`)
  else print(`${what}; recorded, a host serving the run applies it on its next sweep`)
}

/** Where a run stands after a decision applied here: done, or waiting on its next request. */
async function statusOf(host: CliTarget["host"], runId: string): Promise<string | undefined> {
  try {
    const result = (await host.result(runId, { timeoutMs: 1_000 })) as RunResult
    return result.pending ? `waiting on request ${result.pending.id}` : result.status
  } catch {
    return undefined
  }
}

function withExpiry(entry: PendingEntry): PendingEntry & { expired: boolean } {
  return { ...entry, expired: isExpired(entry.request) }
}

/** The exit code, the one line for stderr and the JSON error of a failed command. */
function explain(error: unknown): { code: number; line: string; json: Record<string, unknown> } {
  const message = (error as Error)?.message ?? String(error)
  const errorCode = (error as { code?: unknown })?.code
  const json: Record<string, unknown> = {
    message,
    ...(typeof errorCode === "string" ? { code: errorCode } : {}),
  }
  if (error instanceof UsageError) return { code: EXIT.usage, line: message, json }
  if (errorCode === "TNX_UNKNOWN_REQUEST") return { code: EXIT.unknown, line: message, json }
  if (errorCode === "TNX_ANSWER_CONFLICT") {
    const decision = (error as { decision?: AnswerDecision }).decision
    if (decision) json.decision = decision
    const first = decision ? `; the first decision: ${describeDecision(decision)}` : ""
    return { code: EXIT.conflict, line: `conflict: ${message}${first}`, json }
  }
  if (errorCode === "TNX_ANSWER_EXPIRED") return { code: EXIT.expired, line: `expired: ${message}`, json }
  if (errorCode === "TNX_CONFIG") return { code: EXIT.usage, line: message, json }
  const line = isToolnexusError(error) ? message : `failed: ${message}`
  return { code: EXIT.failed, line: line.split("\n")[0] as string, json }
}
