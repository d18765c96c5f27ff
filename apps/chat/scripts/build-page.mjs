// Bundles the browser page (React + @ai-sdk/react) into dist/page.js with esbuild.
import { fileURLToPath } from "node:url"
import { build } from "esbuild"

const root = fileURLToPath(new URL("..", import.meta.url))

/** Builds dist/page.js; the tests call it too, so they never serve a stale bundle. */
export async function buildPage() {
  await build({
    absWorkingDir: root,
    entryPoints: ["src/page/main.tsx"],
    outfile: "dist/page.js",
    bundle: true,
    format: "esm",
    minify: true,
    jsx: "automatic",
    target: "es2022",
    define: { "process.env.NODE_ENV": '"production"' },
    logLevel: "warning",
  })
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildPage()
