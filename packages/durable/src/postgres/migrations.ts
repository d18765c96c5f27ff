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
  // 2: the request index. Claims move to the request (one decision per request id, whichever
  // conversation of a tree delivers it); conversations keep a pointer to the claim they took.
  (s) => `
  CREATE TABLE ${s}.tnx_requests (
    request_id text PRIMARY KEY,
    state text NOT NULL,
    runtime_key text,
    conversation_id text,
    path text,
    attempts integer NOT NULL DEFAULT 0,
    claim_token text,
    claim_conversation_id text,
    claim_answer text,
    claim_expires_at timestamptz,
    last_error text,
    updated_at timestamptz NOT NULL
  );
  CREATE INDEX tnx_requests_claims ON ${s}.tnx_requests (claim_expires_at, request_id)
    WHERE claim_token IS NOT NULL;
  CREATE INDEX tnx_requests_claim_token ON ${s}.tnx_requests (claim_token) WHERE claim_token IS NOT NULL;
  CREATE INDEX tnx_requests_runtime ON ${s}.tnx_requests (runtime_key) WHERE runtime_key IS NOT NULL;
  CREATE INDEX tnx_conversations_pending_id ON ${s}.tnx_conversations (pending_id)
    WHERE pending_id IS NOT NULL;
  INSERT INTO ${s}.tnx_requests (request_id, state, attempts, claim_token, claim_conversation_id,
      claim_answer, claim_expires_at, updated_at)
    SELECT DISTINCT ON (claim_request_id) claim_request_id, 'claimed', 1, claim_token, id, claim_answer,
      claim_expires_at, updated_at
    FROM ${s}.tnx_conversations WHERE claim_token IS NOT NULL AND claim_request_id = pending_id
    ON CONFLICT DO NOTHING;
  INSERT INTO ${s}.tnx_requests (request_id, state, updated_at)
    SELECT DISTINCT ON (consumed_id) consumed_id, 'applied', updated_at
    FROM ${s}.tnx_conversations WHERE consumed_id IS NOT NULL
    ON CONFLICT DO NOTHING;
  `,
]
