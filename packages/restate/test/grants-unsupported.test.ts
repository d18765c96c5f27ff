import { expect, it } from "vitest"
import { connectRestate } from "../src/index.js"

it("refuses listGrants and revokeGrant with HostUnsupportedError (grants live in a store host's store)", async () => {
  const host = connectRestate({ ingress: "http://127.0.0.1:9" })
  await expect(host.listGrants?.()).rejects.toMatchObject({ code: "TNX_HOST_UNSUPPORTED" })
  await expect(host.revokeGrant?.("grant-x")).rejects.toMatchObject({ code: "TNX_HOST_UNSUPPORTED" })
  await host.close()
})
