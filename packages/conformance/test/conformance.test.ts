import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { STYLES } from "../src/fixture.js"
import { loadFixtures } from "../src/load.js"
import { runFixture } from "../src/runner.js"

// Loaded at import time: a malformed fixture fails the whole file with its name and field.
const fixtures = loadFixtures(fileURLToPath(new URL("../fixtures/", import.meta.url)))

describe.each(STYLES)("conformance fixtures (%s)", (style) => {
  it("finds the fixtures", () => {
    expect(fixtures.length).toBeGreaterThan(0)
  })

  it.each(fixtures.map((fixture) => [fixture.name, fixture] as const))("%s", async (_name, fixture) => {
    await runFixture(fixture, style)
  })
})
