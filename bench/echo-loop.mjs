// The plain tool loop measured by loop-cpu.mjs and tracing-cpu.mjs: the model calls `echo`,
// then answers in text (2 LLM requests per run). The mock, the tool, and the floor.
import { createFloor, startMockServer } from "./harness.mjs"

export const PROMPT = "Please echo the word hello, then tell me you are done."
export const FINAL = "Echoed hello. Done."
export const ECHO = {
  name: "echo",
  description: "Returns the text it is given, unchanged.",
  inputSchema: {
    type: "object",
    properties: { text: { type: "string", description: "The text to echo back." } },
    required: ["text"],
  },
}
export const echo = ({ text }) => String(text)

/** The forked mock answering the echo call, then the final text, in one wire style. */
export function startEchoServer(style = "openai") {
  return startMockServer([
    "--tool",
    "echo",
    "--arguments",
    '{"text":"hello"}',
    "--text",
    FINAL,
    "--style",
    style,
  ])
}

/** The floor: the same requests in the same style, the same trivial tool. */
export function createEchoFloor(baseUrl, style = "openai") {
  return createFloor({
    baseUrl,
    style,
    tools: [ECHO],
    execute: (name, args) => {
      if (name !== "echo") throw new Error(`floor: unknown tool ${name}`)
      return echo(args)
    },
  })
}
