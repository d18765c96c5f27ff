/**
 * The `skill` tool's description, verbatim from upstream toolnexus (SPEC §3): models trained on
 * skill-using agents recognise it, and every port sends the same bytes.
 */
export const SKILL_TOOL_DESCRIPTION = `Load a specialized skill when the task at hand matches one of the skills listed in the system prompt.

Use this tool to inject the skill's instructions and resources into current conversation. The output may contain detailed workflow guidance as well as references to scripts, files, etc in the same directory as the skill.

The skill name must match one of the skills listed in your system prompt.`

/** The first lines of `skillsPrompt()` when any skill has a description, verbatim from upstream (SPEC §3). */
export const SKILLS_PROMPT_PREAMBLE =
  "Skills provide specialized instructions and workflows for specific tasks.\n" +
  "Use the skill tool to load a skill when a task matches its description."
