/**
 * The SQLite schema, as an append-only list of migrations: entry `i` upgrades a database from
 * version `i` to version `i + 1`, so the list's length is the newest schema version. Never
 * edit a shipped entry; append a new one.
 */
export const SQLITE_MIGRATIONS: readonly string[] = [
  // 1: conversations (bookkeeping, pending request, claim), their messages, snapshots.
  `
  CREATE TABLE tnx_conversations (
    id TEXT PRIMARY KEY,
    revision INTEGER NOT NULL,
    message_count INTEGER NOT NULL,
    pending TEXT,
    pending_id TEXT,
    pending_kind TEXT,
    pending_since INTEGER,
    consumed_id TEXT,
    claim_token TEXT,
    claim_request_id TEXT,
    claim_answer TEXT,
    claim_expires_at INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  );
  CREATE INDEX tnx_conversations_pending ON tnx_conversations (pending_since, id)
    WHERE pending_id IS NOT NULL;
  CREATE INDEX tnx_conversations_claims ON tnx_conversations (claim_expires_at, id)
    WHERE claim_token IS NOT NULL;
  CREATE TABLE tnx_messages (
    conversation_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (conversation_id, seq)
  ) WITHOUT ROWID;
  CREATE TABLE tnx_snapshots (
    key TEXT PRIMARY KEY,
    body TEXT NOT NULL,
    updated_at INTEGER NOT NULL
  );
  `,
]
