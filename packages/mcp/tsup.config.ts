import { defineConfig } from "tsup"

export default defineConfig({
  entry: { index: "src/index.ts", "server/index": "src/server/index.ts" },
  format: ["esm"],
  dts: true,
  sourcemap: true,
  clean: true,
  target: "node20",
  // Maps without the sources: stack traces still name src/ files and lines, and installs stay small (DESIGN §7).
  esbuildOptions(options) {
    options.sourcesContent = false
  },
})
