import { ConfigError, type PendingEntry } from "@toolnexus/core"

/** @internal The default namespace: workflow `toolnexus.run`, queue and schema `toolnexus`. */
export const DEFAULT_NAMESPACE = "toolnexus"

const NAMESPACE = /^[a-z][a-z0-9_]{0,40}$/
const RUN_ID = /^[A-Za-z0-9._:-]{1,200}$/

/** @internal The checked namespace (a PostgreSQL schema name, unquoted). */
export function namespaceOf(namespace: string | undefined): string {
  const ns = namespace ?? DEFAULT_NAMESPACE
  if (!NAMESPACE.test(ns))
    throw new ConfigError(`namespace must match ${NAMESPACE}, got ${JSON.stringify(ns)}`)
  return ns
}

/** @internal The checked run id. */
export function checkRunId(runId: string): string {
  if (typeof runId !== "string" || !RUN_ID.test(runId))
    throw new ConfigError(`run id must match ${RUN_ID}, got ${JSON.stringify(runId)}`)
  return runId
}

/** @internal The workflow's input. */
export interface RunInput {
  agent: string
  prompt: string
}

/** @internal The requests table: one row per request id, its entry and (once made) its decision. */
export function requestsDdl(ns: string): string {
  return `CREATE SCHEMA IF NOT EXISTS ${ns};
CREATE TABLE IF NOT EXISTS ${ns}.requests (
  request_id text PRIMARY KEY,
  run_id text NOT NULL,
  entry jsonb NOT NULL,
  since timestamptz NOT NULL,
  decision jsonb
);
CREATE INDEX IF NOT EXISTS requests_open ON ${ns}.requests (since, request_id) WHERE decision IS NULL;`
}

/** @internal An entry row as read back. */
export interface EntryRow {
  entry: PendingEntry
}
