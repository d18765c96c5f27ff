import type { Dirent } from "node:fs"
import path from "node:path"
import { ConfigError } from "../errors.js"
import { readFrontmatter } from "./frontmatter.js"

// From process.getBuiltinModule, not an ESM import: the first ESM import of node:fs builds its
// facade, which reads every export and so loads fs streams (~30 M instructions on Node 24).
const { readFileSync, readdirSync, realpathSync, statSync } = process.getBuiltinModule("node:fs")

/** A skill given as data rather than as a `SKILL.md` on disk. */
export interface SkillDef {
  /** The name the model passes to the `skill` tool; of two skills with one name the first wins. */
  name: string
  /** When to use the skill, for the system-prompt catalog; a skill without one is loadable but not listed. */
  description?: string
  /** The instructions the `skill` tool returns. */
  content: string
  /** Names listed in the tool output's `<skill_files>` block. */
  resources?: string[]
  /** What the tool output calls the skill's base directory; default `skill://<name>/`. */
  base?: string
}

/** A skill that was found, from a folder or from data. */
export interface SkillInfo {
  /** The skill's name, from its `SKILL.md` frontmatter or its {@link SkillDef}. */
  name: string
  /** Its description, from the frontmatter or the data; absent when it has none. */
  description?: string
  /** The absolute path of its `SKILL.md`, or the base of a data skill. */
  location: string
  /** The body after the frontmatter. */
  content: string
  /** `dir` for a `SKILL.md` found under a `skillsDir`, `data` for a {@link SkillDef}. */
  origin: "dir" | "data"
  /** A data skill's resources. */
  resources?: string[]
  /** A data skill's base. */
  base?: string
}

/** Why a candidate did not become a skill. */
export type SkillSkipReason = "missing-name" | "malformed-frontmatter" | "duplicate-name" | "unreadable"

/** Options of {@link listSkills}. */
export interface ListSkillsOptions {
  /**
   * Folders searched for `SKILL.md` files at any depth, in order (relative to the working
   * directory; symlinks followed, `node_modules` and `.git` skipped). Default none.
   */
  skillsDir?: string | string[]
  /** Skills given as data, taken after the folders' skills. Default none. */
  skills?: SkillDef[]
}

/** What {@link listSkills} found and what it left out, with why. */
export interface SkillInventory {
  /** The skills found, folders' first and then data's; of two with one name, the first. */
  skills: SkillInfo[]
  /** Each candidate left out, in the order found. */
  skipped: {
    /** The candidate's `SKILL.md` path, or a data skill's base (`skill://` when it has none). */
    location: string
    /** Why it was left out. */
    reason: SkillSkipReason
  }[]
}

/**
 * Finds the skills of folders and data, unfiltered, and reports each candidate it skipped and why.
 * A bad `SKILL.md` is reported, never thrown; nothing is printed.
 *
 * @throws ConfigError when a `skillsDir` is missing or not a folder.
 * @example
 * const { skills, skipped } = listSkills({ skillsDir: "./skills" })
 */
export function listSkills(opts: ListSkillsOptions): SkillInventory {
  const skills = new Map<string, SkillInfo>()
  const skipped: SkillInventory["skipped"] = []
  const add = (candidate: SkillInfo | { location: string; reason: SkillSkipReason }) => {
    if ("reason" in candidate) skipped.push(candidate)
    else if (skills.has(candidate.name))
      skipped.push({ location: candidate.location, reason: "duplicate-name" })
    else skills.set(candidate.name, candidate)
  }
  for (const dir of skillDirs(opts.skillsDir)) for (const candidate of folderCandidates(dir)) add(candidate)
  for (const def of opts.skills ?? []) add(dataCandidate(def))
  return { skills: [...skills.values()], skipped }
}

/** @internal The skill folders, made absolute and checked. */
export function skillDirs(skillsDir: string | string[] | undefined): string[] {
  if (skillsDir === undefined) return []
  const dirs = Array.isArray(skillsDir) ? skillsDir : [skillsDir]
  return dirs.map((dir, index) => {
    const field = Array.isArray(skillsDir) ? `skillsDir[${index}]` : "skillsDir"
    if (typeof dir !== "string" || dir === "") throw new ConfigError(`${field} must be a folder path`)
    const absolute = path.resolve(dir)
    let isFolder = false
    try {
      isFolder = statSync(absolute).isDirectory()
    } catch {
      throw new ConfigError(`${field}: no such folder: ${absolute}`)
    }
    if (!isFolder) throw new ConfigError(`${field} is not a folder: ${absolute}`)
    return absolute
  })
}

function folderCandidates(root: string): (SkillInfo | { location: string; reason: SkillSkipReason })[] {
  const out: (SkillInfo | { location: string; reason: SkillSkipReason })[] = []
  for (const file of walk(root, (name) => name === "SKILL.md", Number.POSITIVE_INFINITY)) {
    let text: string
    try {
      text = readFileSync(file, "utf8")
    } catch {
      out.push({ location: file, reason: "unreadable" })
      continue
    }
    const { data, content, malformed } = readFrontmatter(text)
    if (malformed) out.push({ location: file, reason: "malformed-frontmatter" })
    else if (!data.name) out.push({ location: file, reason: "missing-name" })
    else out.push({ name: data.name, description: data.description, location: file, content, origin: "dir" })
  }
  return out
}

function dataCandidate(def: SkillDef): SkillInfo | { location: string; reason: SkillSkipReason } {
  if (!def?.name) return { location: def?.base ?? "skill://", reason: "missing-name" }
  const base = def.base ? def.base : `skill://${def.name}/`
  return {
    name: def.name,
    description: def.description,
    location: base,
    content: def.content ?? "",
    origin: "data",
    resources: def.resources ?? [],
    base,
  }
}

/**
 * @internal Files under `root` whose name `keep` accepts, up to `limit`. The order is upstream's, so
 * sampled lists and first-wins duplicates agree byte for byte: a folder's files in name order, then
 * its subfolders last-first (a stack), depth first. Symlinks are followed, each real folder visited
 * once (a cycle ends there); `node_modules` and `.git` are skipped.
 */
export function walk(root: string, keep: (name: string) => boolean, limit: number): string[] {
  const out: string[] = []
  const stack = [root]
  const visited = new Set<string>()
  while (stack.length > 0 && out.length < limit) {
    const dir = stack.pop() as string
    let entries: Dirent[]
    try {
      entries = readdirSync(dir, { withFileTypes: true })
    } catch {
      continue
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    for (const entry of entries) {
      if (out.length >= limit) break
      const full = path.join(dir, entry.name)
      let isFolder = entry.isDirectory()
      let isFile = entry.isFile()
      if (entry.isSymbolicLink()) {
        try {
          const target = statSync(full)
          isFolder = target.isDirectory()
          isFile = target.isFile()
        } catch {
          continue
        }
      }
      if (isFolder) {
        if (entry.name === "node_modules" || entry.name === ".git") continue
        let real: string
        try {
          real = realpathSync(full)
        } catch {
          continue
        }
        if (visited.has(real)) continue
        visited.add(real)
        stack.push(full)
      } else if (isFile && keep(entry.name)) out.push(full)
    }
  }
  return out
}
