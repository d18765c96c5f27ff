/**
 * Test options the packages and apps share (spread into their vitest.config.ts; durable
 * keeps the default, see its config).
 *
 * `isolate: false`: a worker runs its test files one after another in one module graph
 * instead of importing everything afresh for each file. Importing was most of the suite's
 * CPU (core: 19 CPU s isolated, 6 shared); no test file mocks modules, and the ones that
 * change `process.env` put it back.
 */
export const sharedTestOptions = { isolate: false } as const
