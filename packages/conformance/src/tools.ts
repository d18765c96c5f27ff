import { type Answer, type Tool, type ToolContext, defineTool, pending, relayTool } from "@toolnexus/core"
import type { ToolSpec } from "./fixture.js"
import { render } from "./values.js"

/** One execution of a fixture tool, as the runner observed it. */
export interface ToolRun {
  tool: string
  args: Record<string, unknown>
  answer: Answer | null
  callId: string | undefined
  idempotencyKey: string | undefined
}

/**
 * Builds real `@toolnexus/core` tools from the declarative specs. Every execution is appended
 * to `log`, which outlives restarts: it stands for the tools' external side effects.
 */
export function buildTools(specs: readonly ToolSpec[], log: ToolRun[]): Map<string, Tool> {
  const tools = new Map<string, Tool>()
  for (const spec of specs) tools.set(spec.name, buildTool(spec, log))
  return tools
}

function buildTool(spec: ToolSpec, log: ToolRun[]): Tool {
  const description = spec.description ?? `the ${spec.name} tool`
  const inputSchema = schemaOf(spec)
  if (spec.relay) return relayTool(spec.name, description, inputSchema)
  return defineTool({
    name: spec.name,
    description,
    inputSchema,
    run: async (args, ctx: ToolContext) => {
      log.push({
        tool: spec.name,
        args,
        answer: ctx.answer ?? null,
        callId: ctx.callId,
        idempotencyKey: ctx.idempotencyKey,
      })
      if (spec.delayMs) await new Promise((resolve) => setTimeout(resolve, spec.delayMs))
      if (spec.fails !== undefined) throw new Error(render(spec.fails, args))
      if (spec.suspends) {
        // Only an approving answer lets the retry through; without `then` it asks again.
        if (ctx.answer?.ok && spec.then !== undefined) return render(spec.then, args)
        const { kind, prompt, url, data, expiresAt } = spec.suspends
        return pending({
          kind,
          prompt: render(prompt, args),
          ...(url === undefined ? {} : { url: render(url, args) }),
          ...(data === undefined ? {} : { data }),
          ...(expiresAt === undefined ? {} : { expiresAt }),
        })
      }
      return render(spec.returns ?? "", args)
    },
  })
}

function schemaOf(spec: ToolSpec): Record<string, unknown> {
  if (!spec.params) return { type: "object", properties: {} }
  const properties = Object.fromEntries(Object.entries(spec.params).map(([name, type]) => [name, { type }]))
  return { type: "object", properties, required: Object.keys(spec.params) }
}
