import { randomBytes } from "node:crypto"
import pg from "pg"

/** The machine's PostgreSQL (TOOLNEXUS_TEST_PG_URL); the tests skip with a notice without it. */
export const PG_URL = process.env.TOOLNEXUS_TEST_PG_URL

/** A database of its own for this test file, dropped by `drop()`. */
export async function createDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `tnx_dbos_${randomBytes(6).toString("hex")}`
  const admin = new pg.Client({ connectionString: PG_URL })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = new URL(PG_URL as string)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: PG_URL })
      await client.connect()
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await client.end()
    },
  }
}
