import { readFileSync, readdirSync } from "node:fs"
import { basename, join } from "node:path"
import { type Fixture, FixtureError, validateFixture } from "./fixture.js"

/**
 * Reads and validates every `*.json` fixture in `dir`, sorted by file name.
 *
 * @throws FixtureError for a file that is not JSON or not a valid fixture, naming file and field.
 */
export function loadFixtures(dir: string): Fixture[] {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort()
  return files.map((f) => loadFixture(join(dir, f)))
}

/** Reads and validates one fixture file. */
export function loadFixture(file: string): Fixture {
  const text = readFileSync(file, "utf8")
  return parseFixture(text, file)
}

/** Parses and validates fixture text; `file` names it in errors and gives its name. */
export function parseFixture(text: string, file: string): Fixture {
  const name = basename(file).replace(/\.json$/, "")
  if (!/^[a-z0-9]+(-[a-z0-9]+)*$/.test(name))
    throw new FixtureError(
      file,
      "(file name)",
      "a fixture file name is kebab-case, e.g. approval-with-wait-for.json",
    )
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch (error) {
    throw new FixtureError(file, "(json)", `not valid JSON: ${(error as Error).message}`)
  }
  return validateFixture(raw, file, name)
}
