import { defineConfig } from "tsup"

export default defineConfig({
  entry: {
    index: "src/index.ts",
    "engine-testing/index": "src/engine-testing/index.ts",
    "engine-testing/worker": "src/engine-testing/worker.ts",
  },
  format: ["esm"],
  dts: true,
  sourcemap: true,
  clean: true,
  target: "node20",
})
