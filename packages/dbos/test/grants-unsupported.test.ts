import { expect, it } from "vitest"
import { connectDbos } from "../src/index.js"

it("refuses listGrants and revokeGrant with HostUnsupportedError (grants live in a store host's store)", async () => {
  const host = connectDbos({ systemDatabaseUrl: "postgres://nobody@127.0.0.1:9/none" })
  await expect(host.listGrants?.()).rejects.toMatchObject({ code: "TNX_HOST_UNSUPPORTED" })
  await expect(host.revokeGrant?.("grant-x")).rejects.toMatchObject({ code: "TNX_HOST_UNSUPPORTED" })
  await host.close()
})
