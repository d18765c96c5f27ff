import { mkdtempSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { type Request, createToolkit, pendingOf } from "../../src/index.js"

// Issue 33: webfetch checks every redirect hop against allowHosts and the approval policy, as
// it checks the URL it was given. The hosts do not resolve: only the fetch seam answers them.

const roots: string[] = []
afterEach(() => {
  for (const dir of roots.splice(0)) rmSync(dir, { recursive: true, force: true })
})
function scratch(): string {
  const dir = realpathSync(mkdtempSync(path.join(tmpdir(), "tnx-webfetch-")))
  roots.push(dir)
  return dir
}

const START = "https://docs.invalid/start"
const AWAY = "https://elsewhere.invalid/page"

/** A seam serving two hosts; `/start` redirects to the other one. Follows itself unless asked not to, as fetch does. */
function seam() {
  const seen: string[] = []
  const answer = (url: string): Response => {
    seen.push(url)
    if (url === START) return new Response(null, { status: 302, headers: { location: AWAY } })
    if (url === AWAY) return new Response("<p>the <b>other</b> page</p>", { status: 200 })
    return new Response("nope", { status: 404 })
  }
  const fetch: typeof globalThis.fetch = async (input, init) => {
    let reply = answer(String(input))
    while (init?.redirect !== "manual" && reply.status === 302)
      reply = answer(reply.headers.get("location") as string)
    return reply
  }
  return { fetch, seen }
}

describe("webfetch redirects (issue 33)", () => {
  it("a redirect from an allowed host to one that needs approval asks before fetching it", async () => {
    const toolkit = await createToolkit({ builtins: { root: scratch(), allowHosts: ["docs.invalid"] } })
    const { fetch, seen } = seam()
    const asked = await toolkit.execute("webfetch", { url: START }, { fetch })
    const request = pendingOf(asked) as Request
    expect(request).toMatchObject({
      kind: "approval",
      prompt: `Approve builtin tool webfetch with ${JSON.stringify({ url: AWAY })}?`,
      data: { server: "builtin", tool: "webfetch", args: { url: AWAY } },
    })
    expect(seen).toEqual([START])

    // Approved: the retry follows the hop it was approved for.
    const answer = { id: request.id, ok: true }
    const done = await toolkit.execute("webfetch", { url: START }, { fetch, answer, request })
    expect(done).toMatchObject({ output: "the other page", isError: false })
    expect(seen).toEqual([START, START, AWAY])
  })

  it("a declined hop is not fetched; an answer for another URL does not approve the hop", async () => {
    const toolkit = await createToolkit({ builtins: { root: scratch(), allowHosts: ["docs.invalid"] } })
    const { fetch, seen } = seam()
    const request = pendingOf(await toolkit.execute("webfetch", { url: START }, { fetch })) as Request
    const declined = await toolkit.execute(
      "webfetch",
      { url: START },
      { fetch, request, answer: { id: request.id, ok: false } },
    )
    expect(declined).toMatchObject({ output: "declined: builtin tool webfetch", isError: true })
    // Approval of the first URL (under a policy that asks for every call) is not approval of the hop.
    const strict = await createToolkit({ builtins: { root: scratch(), requireApproval: true } })
    const first = pendingOf(await strict.execute("webfetch", { url: START }, { fetch })) as Request
    expect(first.data).toMatchObject({ args: { url: START } })
    const refused = await strict.execute(
      "webfetch",
      { url: START },
      { fetch, request: first, answer: { id: first.id, ok: true } },
    )
    expect(refused).toMatchObject({ isError: true, output: expect.stringContaining(`redirected to ${AWAY}`) })
    expect(seen.filter((url) => url === AWAY)).toEqual([])
  })

  it("a redirect to an allowed host, or with approval off, is followed without asking", async () => {
    const { fetch } = seam()
    const allowed = await createToolkit({ builtins: { root: scratch(), allowHosts: ["*.invalid"] } })
    expect(await allowed.execute("webfetch", { url: START }, { fetch })).toMatchObject({
      output: "the other page",
      isError: false,
    })
    const open = await createToolkit({ builtins: { root: scratch(), requireApproval: false } })
    expect((await open.execute("webfetch", { url: START }, { fetch })).output).toBe("the other page")
  })
})
