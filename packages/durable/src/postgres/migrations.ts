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
  // 3: a first claim in one round trip (see \`claimFirst\` in postgres-store.ts). It grants only
  // when \`decideClaim\` is sure to say "claim": the request is unknown or open and unclaimed,
  // held by no other runtime, the conversation waits on it, and an approval has no
  // \`expiresAt\` to judge (JavaScript's date parsing stays in TypeScript). Anything else
  // returns NULL, changes nothing, and the TypeScript transaction decides. Locks are taken in
  // the order of every claim and fenced save: the request's row, then the conversation's.
  (s) => `
  CREATE OR REPLACE FUNCTION ${s}.tnx_claim_first(p_request text, p_conversation text, p_token text,
    p_answer text, p_lease_ms float8, p_runtime_key text, p_approves boolean) RETURNS text
  LANGUAGE plpgsql AS $claim$
  DECLARE
    req record;
    created boolean := false;
    waiting text;
  BEGIN
    SELECT state, claim_token, runtime_key INTO req FROM ${s}.tnx_requests
      WHERE request_id = p_request FOR UPDATE;
    IF NOT FOUND THEN
      INSERT INTO ${s}.tnx_requests (request_id, state, updated_at) VALUES (p_request, 'open', now())
        ON CONFLICT (request_id) DO NOTHING;
      -- Another delivery created it first: the full decision sees what it did.
      IF NOT FOUND THEN RETURN NULL; END IF;
      created := true;
    ELSIF req.state <> 'open' OR req.claim_token IS NOT NULL
        OR req.runtime_key IS DISTINCT FROM p_runtime_key THEN
      RETURN NULL;
    END IF;
    SELECT pending INTO waiting FROM ${s}.tnx_conversations
      WHERE id = p_conversation AND pending_id = p_request FOR UPDATE;
    -- Textual and conservative: any mention of expiresAt, or any escape that could spell it.
    IF waiting IS NULL OR (p_approves AND (strpos(waiting, 'expiresAt') > 0 OR strpos(waiting, '\\u') > 0)) THEN
      IF created THEN DELETE FROM ${s}.tnx_requests WHERE request_id = p_request; END IF;
      RETURN NULL;
    END IF;
    UPDATE ${s}.tnx_requests SET state = 'claimed', attempts = attempts + 1, claim_token = p_token,
      claim_conversation_id = p_conversation, claim_answer = p_answer,
      claim_expires_at = now() + p_lease_ms * interval '1 millisecond', updated_at = now()
      WHERE request_id = p_request;
    UPDATE ${s}.tnx_conversations SET claim_token = p_token, claim_request_id = p_request
      WHERE id = p_conversation;
    RETURN waiting;
  END
  $claim$;
  `,
  // 4: message bodies may be compact arrays (store-engine/compact-message.ts). No table changes:
  // the version makes an older store refuse the database instead of misreading those rows.
  () => "SELECT 1",
  // 5: a first claim that also reads what the resume loads first, in the same round trip (see
  // `claimFirst` in postgres-store.ts). The claim itself is tnx_claim_first's, unchanged; the
  // read comes after it, in a statement of its own (a fresh snapshot under READ COMMITTED), so
  // it sees every write committed before it, as a read sent after the claim's reply would. The
  // conversation read is
  // the one the resume loads first: for a saved runtime, the deepest holder the request index
  // records (the cascade starts at the leaf); otherwise the claimed conversation. No rows: not
  // granted here. One row per message (seq and body NULL when there are none), each with the
  // claimed request's pending JSON; the conversation columns are NULL when it is not stored.
  (s) => `
  CREATE FUNCTION ${s}.tnx_claim_first_read(p_request text, p_conversation text, p_token text,
    p_answer text, p_lease_ms float8, p_runtime_key text, p_approves boolean)
  RETURNS TABLE (claimed_pending text, holder text, holder_revision integer,
    holder_message_count integer, holder_pending_id text, message_seq integer, message_body text)
  LANGUAGE plpgsql AS $claim$
  DECLARE
    waiting text;
    target text := p_conversation;
  BEGIN
    waiting := ${s}.tnx_claim_first(p_request, p_conversation, p_token, p_answer, p_lease_ms,
      p_runtime_key, p_approves);
    IF waiting IS NULL THEN RETURN; END IF;
    IF p_runtime_key IS NOT NULL THEN
      SELECT COALESCE(r.conversation_id, p_conversation) INTO target FROM ${s}.tnx_requests r
        WHERE r.request_id = p_request;
    END IF;
    RETURN QUERY SELECT waiting, c.id, c.revision, c.message_count, c.pending_id, m.seq, m.body
      FROM ${s}.tnx_conversations c LEFT JOIN ${s}.tnx_messages m ON m.conversation_id = c.id
      WHERE c.id = target ORDER BY m.seq;
    IF NOT FOUND THEN
      RETURN QUERY SELECT waiting, NULL::text, NULL::integer, NULL::integer, NULL::text,
        NULL::integer, NULL::text;
    END IF;
  END
  $claim$;
  `,
]
