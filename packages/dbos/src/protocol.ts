import { namespaceOf as checkedNamespace } from "@toolnexus/core/engine"

const NAMESPACE = /^[a-z][a-z0-9_]{0,40}$/

/** @internal The checked namespace (a PostgreSQL schema name, unquoted). */
export function namespaceOf(namespace: string | undefined): string {
  return checkedNamespace(namespace, NAMESPACE)
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
