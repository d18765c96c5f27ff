import { namespaceOf as checkedNamespace } from "@toolnexus/core/engine"

const NAMESPACE = /^[a-z][a-z0-9_]{0,40}$/

/** @internal The checked namespace (a PostgreSQL schema name, unquoted). */
export function namespaceOf(namespace: string | undefined): string {
  return checkedNamespace(namespace, NAMESPACE)
}

/**
 * @internal The engine's tables, created under a transaction-scoped advisory lock (workers and
 * connections may create them at once): `requests`, one row per request id with its entry,
 * the run (`run_id`) and workflow (`workflow_id`, null: the run id) it waits in, and its
 * decision once made; `runs`, a run's agent, current turn, the conversation after its last
 * turn and (`parked`) the waiting turn's; `events`, each turn workflow's event log.
 */
export function engineDdl(ns: string): string {
  return `BEGIN;
SELECT pg_advisory_xact_lock(hashtext('toolnexus-dbos:' || '${ns}'));
CREATE SCHEMA IF NOT EXISTS ${ns};
CREATE TABLE IF NOT EXISTS ${ns}.requests (
  request_id text PRIMARY KEY,
  run_id text NOT NULL,
  entry jsonb NOT NULL,
  since timestamptz NOT NULL,
  decision jsonb
);
ALTER TABLE ${ns}.requests ADD COLUMN IF NOT EXISTS workflow_id text;
CREATE INDEX IF NOT EXISTS requests_open ON ${ns}.requests (since, request_id) WHERE decision IS NULL;
CREATE INDEX IF NOT EXISTS requests_run ON ${ns}.requests (run_id) WHERE decision IS NULL;
CREATE TABLE IF NOT EXISTS ${ns}.runs (
  run_id text PRIMARY KEY,
  agent text NOT NULL,
  turn integer NOT NULL DEFAULT 1,
  kind text,
  transcript jsonb
);
ALTER TABLE ${ns}.runs ADD COLUMN IF NOT EXISTS parked jsonb;
CREATE TABLE IF NOT EXISTS ${ns}.events (
  seq bigserial PRIMARY KEY,
  workflow_id text NOT NULL,
  event jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS events_workflow ON ${ns}.events (workflow_id, seq);
COMMIT;`
}
