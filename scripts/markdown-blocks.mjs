// The TypeScript blocks of a Markdown file, shared by check-snippets.mjs (type-checks them)
// and run-getting-started.mjs (runs the guide's files).

/**
 * The ```ts / ```typescript blocks of `markdown`: the line of their first code line (1-based),
 * their code, and their marks: `fragment` (not compiled) and `file=NAME` (a named file).
 */
export function blocksOf(markdown) {
  const blocks = []
  const lines = markdown.split("\n")
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*(ts|typescript|tsx)\b(.*)$/.exec(lines[i])
    if (!open) continue
    const [, indent, fence, , info] = open
    const body = []
    let j = i + 1
    for (; j < lines.length && !lines[j].trimStart().startsWith(fence); j++)
      body.push(lines[j].slice(indent.length))
    const file = /\bfile=([\w./-]+\.tsx?)\b/.exec(info)?.[1]
    blocks.push({ line: i + 2, code: body.join("\n"), fragment: /\bfragment\b/.test(info), file })
    i = j
  }
  return blocks
}
