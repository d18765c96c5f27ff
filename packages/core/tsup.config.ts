import { defineConfig } from "tsup"

export default defineConfig({
  entry: {
    index: "src/index.ts",
    "engine/index": "src/engine/index.ts",
    "testing/index": "src/testing/index.ts",
  },
  format: ["esm"],
  dts: true,
  // No source maps: core with undici must install in ≤ 3 MB (DESIGN §7), and its maps (~210 kB
  // on disk, without the sources, which are not shipped) took it over. The dist is unminified ES2022,
  // so stack traces stay readable without them.
  sourcemap: false,
  clean: true,
  target: "node20",
})
