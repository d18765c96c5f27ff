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
 * `expect.poll` waits up to 30 s by default, not vitest's 1 s: a poll waits for a server, a
 * child process or a claim's release, which a loaded 2-core CI machine slows past a second. A
 * poll still ends at its first match, so the limit costs nothing when the condition holds.
 */
export const pollDefaults = { expect: { poll: { timeout: 30_000 } } } as const

/**
 * Test options the packages and apps share (spread into their vitest.config.ts; durable
 * keeps the default, see its config).
 *
 * `isolate: false`: a worker runs its test files one after another in one module graph
 * instead of importing everything afresh for each file. Importing was most of the suite's
 * CPU (core: 19 CPU s isolated, 6 shared); no test file mocks modules, and the ones that
 * change `process.env` put it back.
 */
export const sharedTestOptions = { isolate: false, ...ciRetry(), ...pollDefaults } as const
