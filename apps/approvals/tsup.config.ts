import { defineConfig } from "tsup"

export default defineConfig({
  entry: { main: "src/main.ts", screenshots: "scripts/screenshots.ts" },
  // Only the screenshot script uses it, from the dev dependencies.
  external: ["playwright-core"],
  format: ["esm"],
  sourcemap: true,
  clean: true,
  target: "node20",
})
