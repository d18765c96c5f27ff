import path from "node:path"
import { pathToFileURL } from "node:url"
import { ConfigError } from "../errors.js"
import type { Tool, ToolResult } from "../types.js"
import { type SkillDef, type SkillInfo, listSkills, walk } from "./list-skills.js"
import { SKILLS_PROMPT_PREAMBLE, SKILL_TOOL_DESCRIPTION } from "./skill-texts.js"

/** The skill options of a toolkit (see `ToolkitOptions`). */
export interface SkillOptions {
  /** Folders searched for `SKILL.md` files at any depth, in order (see `ListSkillsOptions.skillsDir`). */
  skillsDir?: string | string[]
  /** Skills given as data, after the folders' skills. */
  skills?: SkillDef[]
  /**
   * More data skills, after `skills`: called once when the toolkit is created; a throw or
   * rejection contributes none.
   */
  skillProvider?: () => SkillDef[] | Promise<SkillDef[]>
  /** Empty ⇒ all; any `true` ⇒ only the names mapped to `true`; else the names mapped to `false` are dropped. */
  skillsFilter?: Record<string, boolean>
  /** Names dropped from the catalog; an explicit `skillsFilter` entry wins. */
  disableSkills?: string[]
  /** Files listed per skill: 0 ⇒ 10, n > 0 ⇒ n, -1 ⇒ no `<skill_files>` block. */
  skillSampleLimit?: number
}

/** @internal The `skill` tool and the catalog text of a toolkit. */
export interface SkillSource {
  tool: Tool
  prompt(): string
  skills: SkillInfo[]
}

/** @internal True when any option that makes skills exist is given. */
export function hasSkillOptions(opts: SkillOptions): boolean {
  return opts.skillsDir !== undefined || opts.skills !== undefined || opts.skillProvider !== undefined
}

/**
 * @internal Builds the skill source: folders in order, then `skills`, then the provider (called
 * once; a throwing provider contributes nothing), first name wins, then the filter.
 * @throws ConfigError for a missing skills folder or a bad `skillSampleLimit`.
 */
export async function createSkillSource(opts: SkillOptions): Promise<SkillSource> {
  const limit = sampleLimitOf(opts.skillSampleLimit)
  if (opts.skillProvider !== undefined && typeof opts.skillProvider !== "function") {
    throw new ConfigError("skillProvider must be a function")
  }
  let provided: SkillDef[] = []
  if (opts.skillProvider) {
    try {
      provided = (await opts.skillProvider()) ?? []
    } catch {
      // Isolated: the other sources still load (upstream's rule).
      provided = []
    }
  }
  const { skills: found } = listSkills({
    skillsDir: opts.skillsDir,
    skills: [...(opts.skills ?? []), ...provided],
  })
  const skills = applyFilter(found, filterOf(opts))
  const byName = new Map(skills.map((s) => [s.name, s]))

  const tool: Tool = {
    name: "skill",
    description: SKILL_TOOL_DESCRIPTION,
    inputSchema: {
      type: "object",
      properties: { name: { type: "string", description: "The name of the skill to load" } },
      required: ["name"],
      additionalProperties: false,
    },
    source: "skill",
    execute(args) {
      const name = String(args?.name ?? "")
      const info = byName.get(name)
      if (!info) {
        const names = [...byName.keys()].sort().join(", ")
        return { output: `Skill "${name}" not found. Available skills: ${names || "none"}`, isError: true }
      }
      return skillOutput(info, limit)
    },
  }
  return {
    tool,
    skills,
    prompt() {
      const described = skills
        .filter((s) => s.description !== undefined)
        .sort((a, b) => a.name.localeCompare(b.name))
      if (described.length === 0) return "No skills are currently available."
      return [
        SKILLS_PROMPT_PREAMBLE,
        "",
        "## Available Skills",
        ...described.map((s) => `- **${s.name}**: ${s.description}`),
      ].join("\n")
    },
  }
}

function sampleLimitOf(value: number | undefined): number {
  if (value === undefined || value === 0) return 10
  if (!Number.isInteger(value) || value < -1) {
    throw new ConfigError(
      `skillSampleLimit must be -1, 0 or a positive integer, got ${JSON.stringify(value)}`,
    )
  }
  return value
}

function filterOf(opts: SkillOptions): Record<string, boolean> | undefined {
  const dropped = opts.disableSkills ?? []
  if (dropped.length === 0) return opts.skillsFilter
  return { ...Object.fromEntries(dropped.map((name) => [name, false])), ...opts.skillsFilter }
}

function applyFilter(skills: SkillInfo[], filter: Record<string, boolean> | undefined): SkillInfo[] {
  if (!filter || Object.keys(filter).length === 0) return skills
  const allowlist = Object.values(filter).some((on) => on === true)
  return skills.filter((s) => (allowlist ? filter[s.name] === true : filter[s.name] !== false))
}

/** Upstream's tool output block (its SPEC §0.6), byte for byte. */
function skillOutput(info: SkillInfo, limit: number): ToolResult {
  let base: string
  let files: string[]
  let dir: string
  let listFiles = limit !== -1
  if (info.origin === "data") {
    base = info.base ?? `skill://${info.name}/`
    const resources = info.resources ?? []
    if (resources.length === 0) listFiles = false
    files = limit > 0 ? resources.slice(0, limit) : resources
    dir = base
  } else {
    dir = path.dirname(info.location)
    base = pathToFileURL(dir).href
    files = limit === -1 ? [] : walk(dir, (name) => name !== "SKILL.md", limit)
  }
  const lines = [
    `<skill_content name="${info.name}">`,
    `# Skill: ${info.name}`,
    "",
    info.content.trim(),
    "",
    `Base directory for this skill: ${base}`,
    "Relative paths in this skill (e.g., scripts/, reference/) are relative to this base directory.",
  ]
  if (listFiles) {
    lines.push(
      "Note: file list is sampled.",
      "",
      "<skill_files>",
      files.map((f) => `<file>${f}</file>`).join("\n"),
      "</skill_files>",
    )
  }
  lines.push("</skill_content>")
  return { output: lines.join("\n"), isError: false, metadata: { name: info.name, dir } }
}
