import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { describeEngineContract, describeHostContract } from "@toolnexus/agents/engine-testing"
import { connectDbos } from "../src/index.js"
import { PG_URL, createDatabase } from "./dbos-harness.js"

const here = dirname(fileURLToPath(import.meta.url))
const engine = {
  adapter: join(here, "fixtures", "adapter.mjs"),
  skip: PG_URL ? undefined : "TOOLNEXUS_TEST_PG_URL is not set",
  async start() {
    const db = await createDatabase()
    return {
      env: { DB_URL: db.url },
      connect: () => connectDbos({ systemDatabaseUrl: db.url }),
      stop: () => db.drop(),
    }
  },
}

describeEngineContract("@toolnexus/dbos on the machine's PostgreSQL", engine)
describeHostContract("connectDbos as a RunHost", { engine, skip: engine.skip })
