/**
 * In CI (`CI` set, as .ci/run does) a failed test runs once more before it fails the run. The
 * suites start real servers, child processes and store deadlines on a shared 2-core machine,
 * and each of three CI runs on 2026-12-02 failed on a different case that only load had slowed
 * past a limit (each since given a load-proof limit). A test broken for real fails both tries;
 * a retried one is marked in vitest's output. Locally nothing is retried.
 */
export function ciRetry(): { retry: number } {
  return { retry: process.env.CI ? 1 : 0 }
}

/**
 * Test options the packages and apps share (spread into their vitest.config.ts; durable
 * keeps the default, see its config).
 *
 * `isolate: false`: a worker runs its test files one after another in one module graph
 * instead of importing everything afresh for each file. Importing was most of the suite's
 * CPU (core: 19 CPU s isolated, 6 shared); no test file mocks modules, and the ones that
 * change `process.env` put it back.
 */
export const sharedTestOptions = { isolate: false, ...ciRetry() } as const
