import { readFileSync } from "node:fs"
import path from "node:path"
import { fileURLToPath } from "node:url"
import type { ClientOptions, ToolkitOptions } from "../src/index.js"
import { expect, it } from "vitest"

// Upstream's option-parity manifest (rows copied from its conformance/options_manifest.json): each
// option must be a property of our published options, by name or alias, normalised as upstream
// does (lower case, non-alphanumerics stripped).
const here = path.dirname(fileURLToPath(import.meta.url))
const manifest = JSON.parse(
  readFileSync(path.join(here, "fixtures/upstream-toolkit/options-manifest.json"), "utf8"),
) as {
  clientOptions: { name: string; aliases: string[] }[]
  toolkitOptions: { name: string; aliases: string[] }[]
}
const normal = (name: string) => name.toLowerCase().replace(/[^a-z0-9]/g, "")

// Every key of each options type. The compiler holds each list equal to its type (a key missing from
// a list, or a list naming no key, fails the typecheck), so the test below checks the published types.
const clientKeys = [
  "baseUrl",
  "style",
  "model",
  "apiKey",
  "headers",
  "systemPrompt",
  "maxTurns",
  "waitFor",
  "hooks",
  "onMetric",
  "retries",
  "retryBaseMs",
  "maxRetryDelayMs",
  "timeoutMs",
  "onError",
  "store",
  "fetch",
  "requestParams",
  "bodyTransform",
] as const satisfies readonly (keyof ClientOptions)[]
const toolkitKeys = [
  "extraTools",
  "mcp",
  "skillsDir",
  "skills",
  "skillProvider",
  "skillsFilter",
  "disableSkills",
  "skillSampleLimit",
  "builtins",
  "disableTools",
  "agents",
  "waitFor",
  "requireApproval",
  "approvalPolicy",
] as const satisfies readonly (keyof ToolkitOptions)[]
type Unlisted<T, K> = Exclude<keyof T, K>
const everyToolkitKeyListed: Unlisted<ToolkitOptions, (typeof toolkitKeys)[number]> extends never
  ? true
  : never = true
void everyToolkitKeyListed

const propertiesOf = (group: "clientOptions" | "toolkitOptions"): readonly string[] =>
  group === "clientOptions" ? clientKeys : toolkitKeys

it("every row of upstream's options manifest is a client or toolkit option, by name or alias", () => {
  const published = {
    clientOptions: new Set(propertiesOf("clientOptions").map(normal)),
    toolkitOptions: new Set(propertiesOf("toolkitOptions").map(normal)),
  }
  const missing: string[] = []
  for (const group of ["clientOptions", "toolkitOptions"] as const) {
    expect(manifest[group].length).toBeGreaterThan(10)
    for (const row of manifest[group]) {
      const names = [row.name, ...row.aliases].map(normal)
      if (!names.some((n) => published[group].has(n))) missing.push(`${group}.${row.name}`)
    }
  }
  expect(missing).toEqual([])
})
