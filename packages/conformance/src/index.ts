export type * from "./fixture.js"
export { FixtureError, VERBS, validateFixture } from "./fixture.js"
export { loadFixture, loadFixtures, parseFixture } from "./load.js"
export { ConformanceFailure, runFixture } from "./runner.js"
