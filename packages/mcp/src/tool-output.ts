import type { ToolResult } from "@toolnexus/core"
import { isPlainObject } from "./config.js"

/** @internal The parts of an MCP `tools/call` result toolnexus reads. */
export interface CallToolOutcome {
  content?: unknown[]
  structuredContent?: unknown
  isError?: boolean
}

/**
 * @internal Text blocks become `output` (joined by a newline); every other block (image, audio,
 * resource, resource link) is summarised in `metadata.content` without its payload, so base64
 * never reaches the model. `structuredContent` stands in for the text when there is none. An
 * output longer than `maxChars` is cut, saying so, with the full length in `metadata.truncated`.
 */
export function toolResultOf(outcome: CallToolOutcome, server: string, maxChars: number): ToolResult {
  const texts: string[] = []
  const others: Record<string, unknown>[] = []
  for (const block of outcome.content ?? []) {
    if (!isPlainObject(block)) continue
    if (block.type === "text" && typeof block.text === "string") texts.push(block.text)
    else others.push(summarise(block))
  }
  let output = texts.join("\n")
  const metadata: Record<string, unknown> = { server }
  if (others.length > 0) metadata.content = others
  if (outcome.structuredContent !== undefined) {
    metadata.structuredContent = outcome.structuredContent
    if (texts.length === 0) output = JSON.stringify(outcome.structuredContent)
  }
  if (output === "" && others.length > 0) output = others.map(describe).join("\n")
  if (output.length > maxChars) {
    metadata.truncated = { chars: output.length, kept: maxChars }
    output = `${output.slice(0, maxChars)}\n[output truncated: ${output.length - maxChars} of ${output.length} characters omitted]`
  }
  return { output, isError: outcome.isError === true, metadata }
}

function summarise(block: Record<string, unknown>): Record<string, unknown> {
  const summary: Record<string, unknown> = { type: block.type }
  if (typeof block.mimeType === "string") summary.mimeType = block.mimeType
  if (typeof block.data === "string") summary.bytes = Math.floor((block.data.length * 3) / 4)
  if (block.type === "resource_link") {
    for (const key of ["uri", "name", "title", "description"] as const)
      if (typeof block[key] === "string") summary[key] = block[key]
  }
  const resource = block.resource
  if (isPlainObject(resource)) {
    if (typeof resource.uri === "string") summary.uri = resource.uri
    if (typeof resource.mimeType === "string") summary.mimeType = resource.mimeType
    if (typeof resource.text === "string") summary.chars = resource.text.length
    if (typeof resource.blob === "string") summary.bytes = Math.floor((resource.blob.length * 3) / 4)
  }
  return summary
}

function describe(summary: Record<string, unknown>): string {
  const details = [
    summary.mimeType,
    summary.uri,
    summary.bytes === undefined ? undefined : `${summary.bytes} bytes`,
  ]
    .filter((d) => d !== undefined)
    .join(", ")
  return `[${String(summary.type)}${details ? `: ${details}` : ""}]`
}
