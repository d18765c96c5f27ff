import { parseArgs } from "node:util"

/** @internal The `toolnexus --help` text; kept free of imports so `--help` loads nothing else. */
export const USAGE = `Usage: toolnexus pending <command> [options]

Commands:
  pending list                  open requests, oldest first (--failed: those whose
                                resumes failed too often, with their last error)
  pending show <id>             one request (or the decision recorded on it)
  pending approve <id>          approve it (--reason, --data '<json>' for edited args or input)
  pending decline <id>          decline it (--reason)
  pending retry <id>            apply the decision recorded on it again: after a worker died
                                mid-resume, a hand-off, or a request whose resumes failed

Where the runs are (one of):
  --store <url>                 sqlite:./file.db, a file path, postgres://…, redis://…
                                (default: $TOOLNEXUS_STORE)
  --restate <ingress url>       a Restate server (--restate-admin <url> to list requests)
  --dbos <postgres url>         the DBOS system database of the workers
  --namespace <name>            the engine workers' namespace (default toolnexus)

Options:
  --agents <module>             with --store: a module whose default export is
                                ({ store }) => HostAgent[]; decisions are applied here
                                (without it they are recorded for a host serving the run)
  --kind <kind>                 list: only requests of this kind
  --limit <n>                   list: at most n requests (default 100)
  --reason <text>               approve/decline: the reason recorded with the decision
  --data <json>                 approve: the answer's data (edited arguments, input values)
  --json                        print JSON instead of a table
  -h, --help                    this text

Exit codes: 0 ok, 1 failure, 2 bad usage or store URL, 3 unknown request,
4 conflict (the first decision is named), 5 expired.
`

/** @internal A command line that cannot be run: exit 2 with its message. */
export class UsageError extends Error {
  override readonly name = "UsageError"
}

/** @internal What the command line asks for. */
export interface CliCommand {
  command: "list" | "show" | "approve" | "decline" | "retry"
  id?: string
  json: boolean
  store?: string
  restate?: string
  restateAdmin?: string
  dbos?: string
  namespace?: string
  agents?: string
  kind?: string
  limit?: number
  reason?: string
  data?: unknown
  failed?: boolean
}

const COMMANDS = new Set(["list", "show", "approve", "decline", "retry"])

/** @internal Parses `toolnexus pending …`; throws {@link UsageError} for anything else. */
export function parseCommand(argv: string[], env: Record<string, string | undefined> = {}): CliCommand {
  let parsed: ReturnType<typeof parse>
  try {
    parsed = parse(argv)
  } catch (error) {
    throw new UsageError((error as Error).message)
  }
  const { values, positionals } = parsed
  const [group, command, id, ...extra] = positionals
  if (group !== "pending")
    throw new UsageError(`unknown command ${JSON.stringify(group ?? "")}: try "toolnexus pending list"`)
  if (!command || !COMMANDS.has(command))
    throw new UsageError(
      `unknown command "pending ${command ?? ""}": use list, show, approve, decline or retry`,
    )
  if (extra.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(extra[0])}`)
  if (command === "list" ? id !== undefined : id === undefined)
    throw new UsageError(
      command === "list" ? `"pending list" takes no id` : `"pending ${command}" needs a request id`,
    )
  const cli: CliCommand = { command: command as CliCommand["command"], json: values.json === true }
  if (id !== undefined) cli.id = id
  const targets = ["store", "restate", "dbos"].filter((name) => values[name as "store"] !== undefined)
  if (targets.length > 1) throw new UsageError(`use one of --${targets.join(", --")}, not several`)
  const store = values.store ?? (targets.length === 0 ? env.TOOLNEXUS_STORE : undefined)
  if (store !== undefined) cli.store = store
  else if (targets.length === 0)
    throw new UsageError("say where the runs are: --store <url>, --restate <url> or --dbos <postgres url>")
  for (const [key, name] of [
    ["restate", "restate"],
    ["restateAdmin", "restate-admin"],
    ["dbos", "dbos"],
    ["namespace", "namespace"],
    ["agents", "agents"],
    ["kind", "kind"],
    ["reason", "reason"],
  ] as const) {
    const value = values[name]
    if (value !== undefined) cli[key] = value
  }
  if (cli.agents !== undefined && cli.store === undefined)
    throw new UsageError("--agents goes with --store (an engine's workers serve its agents)")
  if (values.limit !== undefined) {
    const limit = Number(values.limit)
    if (!Number.isInteger(limit) || limit < 1)
      throw new UsageError(`--limit must be a positive integer, got ${values.limit}`)
    cli.limit = limit
  }
  if (values.data !== undefined) {
    if (command !== "approve") throw new UsageError("--data goes with approve")
    try {
      cli.data = JSON.parse(values.data)
    } catch {
      throw new UsageError("--data must be JSON, e.g. '{\"amount\": 10}'")
    }
  }
  if (values.failed === true) {
    if (command !== "list" || cli.store === undefined)
      throw new UsageError("--failed goes with list on a --store (an engine retries its runs itself)")
    cli.failed = true
  }
  if (cli.reason !== undefined && command !== "approve" && command !== "decline")
    throw new UsageError("--reason goes with approve or decline")
  return cli
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      store: { type: "string" },
      restate: { type: "string" },
      "restate-admin": { type: "string" },
      dbos: { type: "string" },
      namespace: { type: "string" },
      agents: { type: "string" },
      kind: { type: "string" },
      limit: { type: "string" },
      reason: { type: "string" },
      data: { type: "string" },
      json: { type: "boolean" },
      failed: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  })
}
