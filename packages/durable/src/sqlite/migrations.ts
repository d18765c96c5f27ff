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
  // 2: the request index. Claims move to the request (one decision per request id, whichever
  // conversation of a tree delivers it); conversations keep a pointer to the claim they took.
  `
  CREATE TABLE tnx_requests (
    request_id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    runtime_key TEXT,
    conversation_id TEXT,
    path TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    claim_token TEXT,
    claim_conversation_id TEXT,
    claim_answer TEXT,
    claim_expires_at INTEGER,
    last_error TEXT,
    updated_at INTEGER NOT NULL
  );
  CREATE INDEX tnx_requests_claims ON tnx_requests (claim_expires_at, request_id)
    WHERE claim_token IS NOT NULL;
  CREATE INDEX tnx_requests_runtime ON tnx_requests (runtime_key) WHERE runtime_key IS NOT NULL;
  CREATE INDEX tnx_conversations_pending_id ON tnx_conversations (pending_id)
    WHERE pending_id IS NOT NULL;
  INSERT OR IGNORE INTO tnx_requests (request_id, state, attempts, claim_token, claim_conversation_id,
      claim_answer, claim_expires_at, updated_at)
    SELECT claim_request_id, 'claimed', 1, claim_token, id, claim_answer, claim_expires_at, updated_at
    FROM tnx_conversations WHERE claim_token IS NOT NULL AND claim_request_id = pending_id;
  INSERT OR IGNORE INTO tnx_requests (request_id, state, updated_at)
    SELECT consumed_id, 'applied', updated_at FROM tnx_conversations WHERE consumed_id IS NOT NULL;
  `,
  // 3: messages move to a rowid table (keyed by an autoindex on conversation_id, seq). A
  // WITHOUT ROWID table stores each body in its key's B-tree, so appending a turn rebalanced
  // up to three ~400 B-row leaves and wrote 4–7 pages per save; a rowid table appends at its
  // right edge and only the small index entries land in the conversation's key range.
  `
  CREATE TABLE tnx_messages_v3 (
    conversation_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (conversation_id, seq)
  );
  INSERT INTO tnx_messages_v3 (conversation_id, seq, body)
    SELECT conversation_id, seq, body FROM tnx_messages ORDER BY conversation_id, seq;
  DROP TABLE tnx_messages;
  ALTER TABLE tnx_messages_v3 RENAME TO tnx_messages;
  `,
  // 4: messages are keyed by the conversation's integer key instead of its id. An index entry
  // of (id, seq) carried the whole id (~40 B), so a long conversation's entries filled a leaf
  // every ~20 turns and split it in the middle of the index (three leaves and the parent
  // rewritten); (key, seq) entries are ~12 B. The key is the conversations' rowid, made an
  // INTEGER PRIMARY KEY so VACUUM keeps it. Messages of no conversation cannot be read or
  // kept, and are not copied.
  `
  CREATE TABLE tnx_conversations_v4 (
    conversation_key INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
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
  INSERT INTO tnx_conversations_v4 (conversation_key, id, revision, message_count, pending, pending_id,
      pending_kind, pending_since, consumed_id, claim_token, claim_request_id, claim_answer,
      claim_expires_at, created_at, updated_at)
    SELECT rowid, id, revision, message_count, pending, pending_id, pending_kind, pending_since,
      consumed_id, claim_token, claim_request_id, claim_answer, claim_expires_at, created_at, updated_at
    FROM tnx_conversations ORDER BY rowid;
  CREATE TABLE tnx_messages_v4 (
    conversation_key INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (conversation_key, seq)
  );
  INSERT INTO tnx_messages_v4 (conversation_key, seq, body)
    SELECT c.conversation_key, m.seq, m.body FROM tnx_messages m
    JOIN tnx_conversations_v4 c ON c.id = m.conversation_id ORDER BY c.conversation_key, m.seq;
  DROP TABLE tnx_messages;
  DROP TABLE tnx_conversations;
  ALTER TABLE tnx_conversations_v4 RENAME TO tnx_conversations;
  ALTER TABLE tnx_messages_v4 RENAME TO tnx_messages;
  CREATE INDEX tnx_conversations_pending ON tnx_conversations (pending_since, id)
    WHERE pending_id IS NOT NULL;
  CREATE INDEX tnx_conversations_claims ON tnx_conversations (claim_expires_at, id)
    WHERE claim_token IS NOT NULL;
  CREATE INDEX tnx_conversations_pending_id ON tnx_conversations (pending_id)
    WHERE pending_id IS NOT NULL;
  `,
  // 5: a save that only appends messages writes one page. Messages move to a rowid table whose
  // key is conversation_key * 2^32 + seq (a JS array holds fewer than 2^32 messages): one
  // B-tree, a conversation's rows contiguous in it, so an append writes its last leaf only
  // (the separate (key, seq) index was a second page), and the newest conversation appends at
  // the tree's right edge, where a full leaf splits off a new page instead of rebalancing
  // three. The conversation row no longer counts messages: its revision plus the number of
  // stored messages is the transcript's version, so an append leaves the row (and its page)
  // alone. updated_at was written on every save and read by nothing.
  `
  CREATE TABLE tnx_messages_v5 (
    message_key INTEGER PRIMARY KEY,
    body TEXT NOT NULL
  );
  INSERT INTO tnx_messages_v5 (message_key, body)
    SELECT conversation_key * 4294967296 + seq, body FROM tnx_messages ORDER BY conversation_key, seq;
  DROP TABLE tnx_messages;
  ALTER TABLE tnx_messages_v5 RENAME TO tnx_messages;
  ALTER TABLE tnx_conversations DROP COLUMN message_count;
  ALTER TABLE tnx_conversations DROP COLUMN updated_at;
  `,
  // 6: no table changes. From here the pending column may hold its stamped form (form 3 of
  // pending-column.ts: `[prompt, callId, tool, args]`), which a version-5 store would report as
  // corrupt; the version number makes such a store refuse the database at open instead.
  `
  SELECT 'pending column form 3';
  `,
]
