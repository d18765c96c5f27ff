import type { UIMessageChunk } from "./ui-message-chunk.js"

const str = JSON.stringify

/**
 * @internal The JSON of a chunk `UIChunkWriter` built, byte for byte its `JSON.stringify`: the
 * fixed-shape chunks most of a streamed turn is made of (steps, text and reasoning parts,
 * start, finish; their members in the writer's order) by template, `JSON.stringify` only for
 * their strings; every other chunk by `JSON.stringify`.
 */
export function uiChunkJson(chunk: UIMessageChunk): string {
  switch (chunk.type) {
    case "text-delta":
    case "reasoning-delta":
      return `{"type":"${chunk.type}","id":${str(chunk.id)},"delta":${str(chunk.delta)}}`
    case "text-start":
    case "text-end":
    case "reasoning-start":
    case "reasoning-end":
      return `{"type":"${chunk.type}","id":${str(chunk.id)}}`
    case "start-step":
      return '{"type":"start-step"}'
    case "finish-step":
      return '{"type":"finish-step"}'
    case "start":
      if (chunk.messageMetadata !== undefined) break
      return chunk.messageId === undefined
        ? '{"type":"start"}'
        : `{"type":"start","messageId":${str(chunk.messageId)}}`
    case "finish":
      if (chunk.messageMetadata !== undefined) break
      return chunk.finishReason === undefined
        ? '{"type":"finish"}'
        : `{"type":"finish","finishReason":${str(chunk.finishReason)}}`
  }
  return str(chunk)
}

/** @internal A chunk's SSE frame, `data: <its JSON>\n\n` (see {@link uiChunkJson}). */
export function uiChunkFrame(chunk: UIMessageChunk): string {
  return `data: ${uiChunkJson(chunk)}\n\n`
}
