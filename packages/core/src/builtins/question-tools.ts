import { pending } from "../suspension/pending.js"
import { type BuiltinSpec, ok } from "./builtin-env.js"

/** Each question, with ` (options: a, b)` when it has options, one per line (upstream's prompt). */
function promptOf(questions: unknown[]): string {
  return questions
    .map((q) => {
      const item = q as { question?: unknown; options?: unknown } | null
      const text = typeof item?.question === "string" ? item.question : ""
      const options = Array.isArray(item?.options) ? item.options : []
      return options.length > 0 ? `${text} (options: ${options.join(", ")})` : text
    })
    .join("\n")
}

/** @internal `question`: never asks for approval; it is itself a `kind: "question"` suspension. */
export const questionTool: BuiltinSpec = {
  name: "question",
  description:
    'Ask the host one or more questions. Suspends via a kind:"question" Request (§10); the host\'s waitFor resolves it and the answer is returned to the model.',
  inputSchema: {
    type: "object",
    properties: {
      questions: {
        type: "array",
        description: "Questions to ask",
        items: {
          type: "object",
          properties: {
            question: { type: "string" },
            header: { type: "string" },
            options: { type: "array", items: { type: "string" } },
            multiple: { type: "boolean" },
          },
          required: ["question"],
        },
      },
    },
    required: ["questions"],
    additionalProperties: false,
  },
  destructive: () => false,
  async run(args, { answer }) {
    const questions = Array.isArray(args.questions) ? args.questions : []
    if (answer) return ok(JSON.stringify(answer.data ?? {}))
    return pending({ kind: "question", prompt: promptOf(questions), data: { questions } })
  },
}

/** @internal `todowrite`: replaces the todo list and renders it. */
export const todowriteTool: BuiltinSpec = {
  name: "todowrite",
  description: "Replace the session todo list. Returns the rendered list.",
  inputSchema: {
    type: "object",
    properties: {
      todos: {
        type: "array",
        description: "The full todo list to store",
        items: {
          type: "object",
          properties: {
            id: { type: "string" },
            text: { type: "string" },
            completed: { type: "boolean" },
          },
          required: ["id", "text", "completed"],
        },
      },
    },
    required: ["todos"],
    additionalProperties: false,
  },
  destructive: () => false,
  async run(args) {
    const todos = Array.isArray(args.todos) ? (args.todos as Record<string, unknown>[]) : []
    const rendered = todos.map((t) => `[${t?.completed ? "x" : " "}] ${String(t?.text ?? "")}`).join("\n")
    return ok(rendered || "(no todos)", { todos })
  },
}
