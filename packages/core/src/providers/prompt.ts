import { ConfigError } from "../errors.js"
import { isPlainObject } from "../internal/plain-object.js"
import type { ContentPart, Prompt } from "../types.js"

/**
 * @internal The user turn of a prompt: its text, or its parts each written by `write` in the
 * style's own shape.
 *
 * @throws ConfigError naming the first malformed part.
 */
export function userTurn<Part>(
  prompt: Prompt,
  write: (part: ContentPart) => Part,
): { role: "user"; content: string | Part[] } {
  const parts = promptParts(prompt)
  return { role: "user", content: parts ? parts.map(write) : (prompt as string) }
}

/**
 * Checks a prompt before anything is sent, so a bad part is a typed error naming it rather
 * than a provider's 400.
 */
function promptParts(prompt: Prompt): ContentPart[] | undefined {
  if (typeof prompt === "string") return undefined
  if (!Array.isArray(prompt)) throw new ConfigError("a prompt must be a string or an array of content parts")
  prompt.forEach((part, i) => {
    const problem = partProblem(part)
    if (problem) throw new ConfigError(`prompt part ${i}: ${problem}`)
  })
  return prompt
}

function partProblem(part: unknown): string | undefined {
  if (!isPlainObject(part)) return "must be an object"
  const str = (key: string) => typeof part[key] === "string" && part[key] !== ""
  switch (part.type) {
    case "text":
      return typeof part.text === "string" ? undefined : "a text part needs `text`"
    case "image":
      if (str("url")) return undefined
      return str("data") && str("mediaType")
        ? undefined
        : "an image part needs `url`, or `data` and `mediaType`"
    case "file":
      return str("data") && str("mediaType") ? undefined : "a file part needs `data` and `mediaType`"
    default:
      return `unknown part type ${JSON.stringify(part.type)} (expected "text", "image" or "file")`
  }
}

/** @internal A `data:` URL of base64 content. */
export function dataUrl(mediaType: string, data: string): string {
  return `data:${mediaType};base64,${data}`
}
