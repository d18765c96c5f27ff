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

/**
 * Every fenced block of `markdown` with its language and marks: `file=NAME` (a file the
 * reader writes, any language) and `run=NAME` (a shell block a runner executes by that name).
 */
export function fencedBlocksOf(markdown) {
  const blocks = []
  const lines = markdown.split("\n")
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)(.*)$/.exec(lines[i])
    if (!open) continue
    const [, indent, fence, lang, info] = open
    const body = []
    let j = i + 1
    for (; j < lines.length && !lines[j].trimStart().startsWith(fence); j++)
      body.push(lines[j].slice(indent.length))
    blocks.push({
      line: i + 2,
      lang,
      code: body.join("\n"),
      file: /\bfile=([\w./-]+)/.exec(info)?.[1],
      run: /\brun=([\w-]+)/.exec(info)?.[1],
    })
    i = j
  }
  return blocks
}
