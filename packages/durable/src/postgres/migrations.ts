/**
 * The PostgreSQL schema, as an append-only list of migrations: entry `i` upgrades a database
 * from version `i` to version `i + 1`, so the list's length is the newest schema version.
 * Each entry gets the quoted namespace (e.g. `"public"`) that holds the tables. Never edit a
 * shipped entry; append a new one.
 */
export const POSTGRES_MIGRATIONS: readonly ((schema: string) => string)[] = [
  // 1: conversations (bookkeeping, pending request, claim), their messages, snapshots.
  // Bodies are `text`, not `jsonb`: a save compares them byte for byte with the JSON it is
  // given, and jsonb would reorder keys.
  (s) => `
  CREATE TABLE ${s}.tnx_conversations (
    id text PRIMARY KEY,
    revision integer NOT NULL,
    message_count integer NOT NULL,
    pending text,
    pending_id text,
    pending_kind text,
    pending_since timestamptz,
    consumed_id text,
    claim_token text,
    claim_request_id text,
    claim_answer text,
    claim_expires_at timestamptz,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
  );
  CREATE INDEX tnx_conversations_pending ON ${s}.tnx_conversations (pending_since, id)
    WHERE pending_id IS NOT NULL;
  CREATE INDEX tnx_conversations_claims ON ${s}.tnx_conversations (claim_expires_at, id)
    WHERE claim_token IS NOT NULL;
  CREATE TABLE ${s}.tnx_messages (
    conversation_id text NOT NULL,
    seq integer NOT NULL,
    body text NOT NULL,
    PRIMARY KEY (conversation_id, seq)
  );
  CREATE TABLE ${s}.tnx_snapshots (
    key text PRIMARY KEY,
    body text NOT NULL,
    updated_at timestamptz NOT NULL
  );
  `,
]
