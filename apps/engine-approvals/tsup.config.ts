import { defineConfig } from "tsup"

export default defineConfig({
  // The inbox's modules come from the approvals app's sources, bundled in.
  entry: { main: "src/main.ts", worker: "src/worker.ts" },
  format: ["esm"],
  sourcemap: true,
  clean: true,
  target: "node20",
})
