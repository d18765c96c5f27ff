import { defineConfig } from "tsup"

export default defineConfig({
  entry: {
    index: "src/index.ts",
    "sqlite/index": "src/sqlite/index.ts",
    "postgres/index": "src/postgres/index.ts",
    "redis/index": "src/redis/index.ts",
    "testing/index": "src/testing/index.ts",
    "testing/crash-worker": "src/testing/crash-worker.ts",
    "cli/main": "src/cli/main.ts",
  },
  format: ["esm"],
  dts: true,
  sourcemap: true,
  clean: true,
  target: "node20",
  // Maps without the sources: stack traces still name src/ files and lines, and installs stay small (DESIGN §7).
  esbuildOptions(options) {
    options.sourcesContent = false
  },
  external: [
    "better-sqlite3",
    "pg",
    "ioredis",
    "@toolnexus/core",
    "@toolnexus/core/testing",
    "@toolnexus/agents",
    "@toolnexus/restate",
    "@toolnexus/dbos",
  ],
})
