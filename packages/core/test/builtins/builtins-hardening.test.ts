import { execFileSync } from "node:child_process"
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs"
import { tmpdir } from "node:os"
import path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { type Toolkit, createToolkit } from "../../src/index.js"

// DESIGN §20 "Builtins": nothing a model sends a builtin can stall the process, half-apply a
// patch, flood the context or show where the host keeps its files.
const roots: string[] = []
function scratch(): string {
  const dir = realpathSync(mkdtempSync(path.join(tmpdir(), "tnx-hard-")))
  roots.push(dir)
  return dir
}
afterEach(() => {
  for (const dir of roots.splice(0)) rmSync(dir, { recursive: true, force: true })
})
const toolkitIn = (root: string, more: Record<string, unknown> = {}): Promise<Toolkit> =>
  createToolkit({ builtins: { root, requireApproval: false, ...more } })

/** Every file under `dir`, relative, with its content ("<dir>" for folders). */
function snapshot(dir: string): Record<string, string> {
  const seen: Record<string, string> = {}
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const full = path.join(entry.parentPath ?? entry.path, entry.name)
    seen[path.relative(dir, full)] = entry.isDirectory() ? "<dir>" : readFileSync(full, "utf8")
  }
  return seen
}

describe("grep's pattern cannot stall the process", () => {
  it("a catastrophically backtracking pattern ends as an error in its budget while timers keep firing", async () => {
    const root = scratch()
    // `^(a+)+$` against 26 a's and a '!' backtracks ~2^26 times: seconds on the main thread.
    writeFileSync(path.join(root, "evil.txt"), `ok\n${"a".repeat(26)}!\n`)
    const toolkit = await toolkitIn(root, { grepTimeoutMs: 100 })
    let fired = false
    const timer = setTimeout(() => {
      fired = true
    }, 20)
    const result = await toolkit.execute("grep", { pattern: "^(a+)+$" })
    clearTimeout(timer)
    // Had the match run on this thread, the grep would resolve before the 20 ms timer could fire.
    expect(fired).toBe(true)
    expect(result.isError).toBe(true)
    expect(result.output).toBe(
      "grep: pattern took too long (over 100 ms); use a simpler pattern or a narrower path",
    )
    expect(result.metadata).toEqual({ timedOut: true })
  })

  it("an ordinary pattern still matches across files, include and limit applied", async () => {
    const root = scratch()
    mkdirSync(path.join(root, "src"))
    for (let i = 0; i < 30; i++) writeFileSync(path.join(root, "src", `f${i}.ts`), `x\nneedle ${i}\ny\n`)
    writeFileSync(path.join(root, "src", "skip.md"), "needle md\n")
    const toolkit = await toolkitIn(root)
    const result = await toolkit.execute("grep", { pattern: "needle \\d+$", include: "*.ts", limit: 3 })
    expect(result).toEqual({
      output: "src/f0.ts:2:needle 0\nsrc/f1.ts:2:needle 1\nsrc/f10.ts:2:needle 10",
      isError: false,
      metadata: { count: 3 },
    })
  })

  it("refuses a budget that is not a positive integer, naming the field", async () => {
    await expect(toolkitIn(scratch(), { grepTimeoutMs: 0 })).rejects.toThrow(
      "builtins.grepTimeoutMs must be a positive integer, got 0",
    )
  })
})

describe("read, write and edit refuse what is not a regular file", () => {
  it("a FIFO is refused before it is opened (opening one waits for a writer)", async () => {
    const root = scratch()
    execFileSync("mkfifo", [path.join(root, "pipe")])
    const toolkit = await toolkitIn(root)
    expect(await toolkit.execute("read", { path: "pipe" })).toEqual({
      output: "read: pipe is a FIFO, not a regular file",
      isError: true,
    })
    expect((await toolkit.execute("edit", { path: "pipe", oldString: "a", newString: "b" })).output).toBe(
      "edit: pipe is a FIFO, not a regular file",
    )
    expect((await toolkit.execute("write", { path: "pipe", content: "x" })).output).toBe(
      "write: pipe is a FIFO, not a regular file",
    )
    expect((await toolkit.execute("grep", { pattern: "x" })).output).toBe("")
  })

  it("a directory is refused by name", async () => {
    const root = scratch()
    mkdirSync(path.join(root, "sub"))
    const toolkit = await toolkitIn(root)
    expect((await toolkit.execute("read", { path: "sub" })).output).toBe(
      "read: sub is a directory, not a regular file",
    )
    expect((await toolkit.execute("write", { path: "sub", content: "x" })).output).toBe(
      "write: sub is a directory, not a regular file",
    )
  })
})

describe("apply_patch writes every file or none", () => {
  const patch = (...sections: string[]) => ["*** Begin Patch", ...sections, "*** End Patch"].join("\n")
  function setUp(): string {
    const root = scratch()
    writeFileSync(path.join(root, "a.txt"), "one\ntwo\n")
    writeFileSync(path.join(root, "b.txt"), "bee\n")
    writeFileSync(path.join(root, "blocker"), "a file where a folder is wanted\n")
    return root
  }

  it("a third file that cannot be staged leaves the first two untouched", async () => {
    const root = setUp()
    const before = snapshot(root)
    const result = await (await toolkitIn(root)).execute("apply_patch", {
      patchText: patch(
        "*** Update File: a.txt",
        "-one",
        "+ONE",
        "*** Delete File: b.txt",
        "*** Add File: blocker/new.txt",
        "+new",
      ),
    })
    expect(result.isError).toBe(true)
    expect(result.output).toMatch(/^apply_patch: E\w+: .*mkdir 'blocker'$/)
    expect(snapshot(root)).toEqual(before)
  })

  it("a third file that fails as it is put in place undoes the first two", async () => {
    const root = setUp()
    const before = snapshot(root)
    // A name one byte past the file system's limit: staged under a short scratch name, it fails
    // only at the rename into place, after a.txt and b.txt were changed.
    const long = "n".repeat(256)
    const result = await (await toolkitIn(root)).execute("apply_patch", {
      patchText: patch(
        "*** Update File: a.txt",
        "-one",
        "+ONE",
        "*** Delete File: b.txt",
        `*** Add File: ${long}`,
        "+new",
      ),
    })
    expect(result.isError).toBe(true)
    expect(result.output).toContain("ENAMETOOLONG")
    expect(result.output).not.toContain(root)
    expect(snapshot(root)).toEqual(before)
  })

  it("applied, it leaves no scratch files, creates folders and keeps a file's permissions", async () => {
    const root = setUp()
    chmodSync(path.join(root, "a.txt"), 0o750)
    const result = await (await toolkitIn(root)).execute("apply_patch", {
      patchText: patch(
        "*** Update File: a.txt",
        "-one",
        "+ONE",
        "*** Delete File: b.txt",
        "*** Add File: new/deep/c.txt",
        "+sea",
      ),
    })
    expect(result.output).toBe("Applied patch: 3 file operations")
    expect(snapshot(root)).toEqual({
      "a.txt": "ONE\ntwo\n",
      blocker: "a file where a folder is wanted\n",
      new: "<dir>",
      "new/deep": "<dir>",
      "new/deep/c.txt": "sea",
    })
    expect(statSync(path.join(root, "a.txt")).mode & 0o777).toBe(0o750)
  })

  it("refuses a file named twice rather than losing one change", async () => {
    const root = setUp()
    const before = snapshot(root)
    const result = await (await toolkitIn(root)).execute("apply_patch", {
      patchText: patch("*** Update File: a.txt", "-one", "+1", "*** Update File: a.txt", "-two", "+2"),
    })
    expect(result.output).toBe("apply_patch: file named twice in the patch: a.txt")
    expect(snapshot(root)).toEqual(before)
  })
})

describe("glob output is capped", () => {
  it("cuts past maxOutputChars with a note and metadata.truncated, whatever the limit", async () => {
    const root = scratch()
    for (let i = 0; i < 40; i++) writeFileSync(path.join(root, `file-${String(i).padStart(2, "0")}.txt`), "")
    const result = await (await toolkitIn(root, { maxOutputChars: 50 })).execute("glob", {
      pattern: "*",
      limit: 1e6,
    })
    expect(result.output.indexOf("\n[output truncated")).toBe(50)
    expect(result.output).toMatch(/\n\[output truncated: \d+ more characters\]$/)
    expect(result.metadata).toEqual({ count: 40, truncated: true })
  })
})

describe("messages show paths relative to root", () => {
  it("no result, error or not, names the root's absolute path", async () => {
    const root = scratch()
    writeFileSync(path.join(root, "f.txt"), "needle\n")
    mkdirSync(path.join(root, "dir"))
    const toolkit = await toolkitIn(root)
    const at = (file: string) => path.join(root, file)
    const calls: [string, Record<string, unknown>, string][] = [
      ["read", { path: at("missing.txt") }, "read: ENOENT: no such file or directory, open 'missing.txt'"],
      ["read", { path: at("dir") }, "read: dir is a directory, not a regular file"],
      ["write", { path: at("w.txt"), content: "x" }, "Wrote 1 bytes to w.txt"],
      ["write", { path: "f.txt/under", content: "x" }, "write: EEXIST: file already exists, mkdir 'f.txt'"],
      ["edit", { path: at("f.txt"), oldString: "zzz", newString: "y" }, "edit: oldString not found in f.txt"],
      [
        "edit",
        { path: at("missing.txt"), oldString: "a", newString: "b" },
        "edit: ENOENT: no such file or directory, open 'missing.txt'",
      ],
      ["grep", { pattern: "needle" }, "f.txt:1:needle"],
      ["grep", { pattern: "needle", path: root }, "f.txt:1:needle"],
      [
        "apply_patch",
        { patchText: "*** Begin Patch\n*** Update File: missing.txt\n-a\n+b\n*** End Patch" },
        "apply_patch: ENOENT: no such file or directory, open 'missing.txt'",
      ],
      [
        "apply_patch",
        { patchText: `*** Begin Patch\n*** Add File: ${at("f.txt")}\n+x\n*** End Patch` },
        "apply_patch: file already exists: f.txt",
      ],
    ]
    for (const [tool, args, output] of calls) {
      const result = await toolkit.execute(tool, args)
      expect({ tool, output: result.output }).toEqual({ tool, output })
      expect(result.output).not.toContain(root)
    }
  })
})
