#!/usr/bin/env node
// Generates src/fixture-types.generated.ts from fixture.schema.json, the one source of the
// fixture format (the loader validates files against the same schema). `--check` fails
// instead of writing when the committed file differs, so the two cannot drift apart.
//
//   node scripts/generate-fixture-types.mjs [--check]
import { readFileSync, writeFileSync } from "node:fs"
import { resolve } from "node:path"
import { compile } from "json-schema-to-typescript"

const here = resolve(import.meta.dirname, "..")
const schemaFile = resolve(here, "fixture.schema.json")
const outFile = resolve(here, "src/fixture-types.generated.ts")

const schema = JSON.parse(readFileSync(schemaFile, "utf8"))
const banner =
  "// Generated from fixture.schema.json by scripts/generate-fixture-types.mjs: do not edit.\n" +
  "// Change the schema, then run `node scripts/generate-fixture-types.mjs`."
const generated = await compile(schema, "FixtureFile", {
  bannerComment: banner,
  additionalProperties: false,
  unreachableDefinitions: true,
  declareExternallyReferenced: true,
  style: { semi: false, printWidth: 110, trailingComma: "all" },
})

if (process.argv.includes("--check")) {
  const current = readFileSync(outFile, "utf8")
  if (current !== generated) {
    console.error(
      "src/fixture-types.generated.ts is out of date with fixture.schema.json: " +
        "run `node scripts/generate-fixture-types.mjs` in packages/conformance",
    )
    process.exit(1)
  }
} else writeFileSync(outFile, generated)
