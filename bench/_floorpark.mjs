import Database from 'better-sqlite3'; import { request } from 'undici';
const db = new Database('/tmp/G/floor.db'); db.pragma('journal_mode = WAL');
db.exec('CREATE TABLE IF NOT EXISTS runs (id TEXT PRIMARY KEY, state TEXT NOT NULL)');
const put = db.prepare('INSERT OR REPLACE INTO runs (id, state) VALUES (?, ?)');
const TOOLS = [{ type: 'function', function: { name: 'lookup', description: 'Look up the data.', parameters: { type: 'object', properties: {} } } }];
for (let i = 0; i < 20; i++) { const messages = [{ role: 'user', content: 'go' }];
  const res = await request('http://127.0.0.1:38477/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'mock', messages, tools: TOOLS }) });
  const m = (await res.body.json()).choices[0].message; messages.push(m); put.run(`run-${i}`, JSON.stringify({ messages, callId: m.tool_calls[0].id })); }
