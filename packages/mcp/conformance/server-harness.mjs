#!/usr/bin/env node
// The official MCP conformance suite's server fixtures on createMcpServer's public API (built
// dist): a hosted agent and the tasks extension's fixture tools through createStoreHost on a
// memory store, the suite's other fixture tools, resources, prompts and completions through
// `configure`. Serves http://127.0.0.1:<PORT>/mcp.
//
//   node scripts/conformance.mjs --server 2026-07-28     (starts this, runs the suite's server set)
//
// PORT picks the port (default: any free one); the URL is printed on stdout once listening.
import { createServer } from "node:http"
import {
  ResourceTemplate,
  acceptedContent,
  completable,
  inputRequired,
  inputResponse,
} from "@modelcontextprotocol/server"
import { createInProcessClient, defineTool, hostAgent, pending } from "@toolnexus/core"
import { createMemoryStore, createStoreHost } from "@toolnexus/durable"
import { createMcpServer, hostedToolAgents } from "@toolnexus/mcp/server"
import { toNodeListener } from "@toolnexus/ui"
import * as z from "zod"

const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
const WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="
const text = (t) => ({ content: [{ type: "text", text: t }] })
const NAME = z.object({ name: z.string() })

/**
 * A real host on a memory store: agent `echo` (a scripted model answering its prompt) and the
 * tasks extension's fixture tools, served as plain tools (model-less hosted runs).
 */
const sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms)
    signal?.addEventListener("abort", () => {
      clearTimeout(timer)
      reject(new Error("cancelled"))
    })
  })
const tools = [
  defineTool({
    name: "greet",
    description: "Greets (sync-only: it answers at once)",
    inputSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
    run: ({ name }) => `Hello, ${name}!`,
  }),
  defineTool({
    name: "slow_compute",
    description: "Sleeps `seconds`, then answers (a task when it outlives taskAfterMs)",
    inputSchema: {
      type: "object",
      properties: { seconds: { type: "number" }, label: { type: "string" } },
      required: ["seconds"],
    },
    run: async ({ seconds, label }, ctx) => {
      await sleep(Number(seconds) * 1000, ctx?.signal)
      return `computed ${label ?? ""} after ${seconds} s`
    },
  }),
  defineTool({
    name: "failing_job",
    description: "Fails after about a second (a tool error)",
    inputSchema: { type: "object", properties: {} },
    run: async (_args, ctx) => {
      await sleep(1000, ctx?.signal)
      throw new Error("failing_job failed, as it always does")
    },
  }),
  // A call is a task when it outlives taskAfterMs (200 ms here); what a run knows sooner (its
  // result, or its questions) answers in-band. So confirm_delete looks the file up first (a
  // task that then asks), and test_tool_with_task asks first (input_required), then works (a
  // task on the retry: SEP-2663's MRTR-then-task composition).
  defineTool({
    name: "confirm_delete",
    description: "Looks the file up, asks to confirm, then deletes",
    inputSchema: { type: "object", properties: { filename: { type: "string" } }, required: ["filename"] },
    run: async ({ filename }, ctx) => {
      if (ctx?.answer?.ok) return `deleted ${filename}`
      await sleep(500, ctx?.signal)
      return pending({
        kind: "input",
        prompt: `Delete ${filename}?`,
        data: {
          schema: { type: "object", properties: { confirm: { type: "boolean" } }, required: ["confirm"] },
        },
      })
    },
  }),
  defineTool({
    name: "test_tool_with_task",
    description: "Asks a name, then works a second and greets",
    inputSchema: { type: "object", properties: {} },
    run: async (_args, ctx) => {
      const name = ctx?.answer?.ok ? ctx.answer.data?.name : undefined
      if (typeof name !== "string")
        return pending({
          kind: "input",
          prompt: "What is your name?",
          data: { schema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] } },
        })
      await sleep(1000, ctx?.signal)
      return `Hello, ${name}!`
    },
  }),
]
// json-schema-2020-12's fixture: a hosted tool's JSON Schema 2020-12 input schema reaches
// tools/list as written, and calls are validated against it (if/then/else included).
tools.push(
  defineTool({
    name: "json_schema_2020_12_tool",
    description: "Takes a contact, described in JSON Schema 2020-12",
    inputSchema: {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      $defs: {
        address: {
          $anchor: "addressDef",
          type: "object",
          properties: { street: { type: "string" }, city: { type: "string" } },
        },
      },
      properties: {
        name: { type: "string" },
        address: { $ref: "#/$defs/address" },
        contactMethod: { type: "string", enum: ["phone", "email"] },
        phone: { type: "string" },
        email: { type: "string" },
      },
      allOf: [{ anyOf: [{ required: ["phone"] }, { required: ["email"] }] }],
      if: { properties: { contactMethod: { const: "phone" } }, required: ["contactMethod"] },
      // biome-ignore lint/suspicious/noThenProperty: the JSON Schema keyword, never awaited
      then: { required: ["phone"] },
      else: { required: ["email"] },
      additionalProperties: false,
    },
    run: (args) => `contact: ${JSON.stringify(args)}`,
  }),
  // http-custom-header-server-validation's fixture: a hosted tool whose `region` is mirrored in
  // an Mcp-Param-Region header (SEP-2243), checked against the body before the run starts.
  defineTool({
    name: "test_custom_headers",
    description: "Answers for a region (mirrored in the Mcp-Param-Region header)",
    inputSchema: {
      type: "object",
      properties: { region: { type: "string", "x-mcp-header": "Region" }, query: { type: "string" } },
      required: ["region"],
    },
    run: ({ region, query }) => `region ${region}: ${query ?? ""}`,
  }),
)
const store = createMemoryStore()
const echo = hostAgent({
  name: "echo",
  client: createInProcessClient({
    model: "echo",
    store,
    generate: async ({ messages }) => ({
      content: `echo: ${messages.findLast((m) => m.role === "user")?.content}`,
    }),
  }),
})
const host = createStoreHost({
  store,
  agents: [echo, ...(await hostedToolAgents(tools, { store }))],
  sweepEveryMs: false,
})

function fixtures(server) {
  server.registerTool("test_simple_text", { description: "Simple text" }, async () =>
    text("This is a simple text response for testing."),
  )
  server.registerTool("test_image_content", { description: "An image" }, async () => ({
    content: [{ type: "image", data: PNG, mimeType: "image/png" }],
  }))
  server.registerTool("test_audio_content", { description: "Audio" }, async () => ({
    content: [{ type: "audio", data: WAV, mimeType: "audio/wav" }],
  }))
  server.registerTool("test_embedded_resource", { description: "An embedded resource" }, async () => ({
    content: [
      {
        type: "resource",
        resource: {
          uri: "test://embedded-resource",
          mimeType: "text/plain",
          text: "This is an embedded resource content.",
        },
      },
    ],
  }))
  server.registerTool("test_multiple_content_types", { description: "Mixed content" }, async () => ({
    content: [
      { type: "text", text: "Multiple content types test:" },
      { type: "image", data: PNG, mimeType: "image/png" },
      {
        type: "resource",
        resource: {
          uri: "test://mixed-content-resource",
          mimeType: "application/json",
          text: '{"test":"data","value":123}',
        },
      },
    ],
  }))
  server.registerTool("test_error_handling", { description: "Always fails" }, async () => {
    throw new Error("This tool intentionally returns an error for testing")
  })
  server.registerTool("test_tool_with_progress", { description: "Reports progress" }, async (ctx) => {
    const progressToken = ctx.mcpReq._meta?.progressToken
    for (const progress of [0, 50, 100]) {
      if (progressToken !== undefined)
        await ctx.mcpReq.notify({
          method: "notifications/progress",
          params: { progressToken, progress, total: 100 },
        })
      if (progress < 100) await new Promise((resolve) => setTimeout(resolve, 50))
    }
    return text("Progress tool completed")
  })
  // Multi-round-trip fixtures that need no request state.
  server.registerTool(
    "test_input_required_result_elicitation",
    { description: "Asks a name" },
    async (ctx) => {
      const answer = acceptedContent(ctx.mcpReq.inputResponses, "user_name", NAME)
      if (answer) return text(`Hello, ${answer.name}!`)
      return inputRequired({
        inputRequests: {
          user_name: inputRequired.elicit({ message: "What is your name?", requestedSchema: NAME }),
        },
      })
    },
  )
  server.registerTool(
    "test_input_required_result_sampling",
    { description: "Asks the model" },
    async (ctx) => {
      const view = inputResponse(ctx.mcpReq.inputResponses, "capital_question")
      if (view.kind === "sampling") return text(`Sampling said: ${JSON.stringify(view.result.content)}`)
      return inputRequired({
        inputRequests: {
          capital_question: inputRequired.createMessage({
            messages: [{ role: "user", content: { type: "text", text: "What is the capital of France?" } }],
            maxTokens: 100,
          }),
        },
      })
    },
  )
  server.registerTool(
    "test_input_required_result_list_roots",
    { description: "Asks the roots" },
    async (ctx) => {
      const view = inputResponse(ctx.mcpReq.inputResponses, "client_roots")
      if (view.kind === "roots") return text(`Roots: ${view.roots.map((r) => r.uri).join(", ")}`)
      return inputRequired({ inputRequests: { client_roots: inputRequired.listRoots() } })
    },
  )
  server.registerTool(
    "test_input_required_result_capabilities",
    { description: "Asks only what the client declared" },
    async (ctx) => {
      if (ctx.mcpReq.inputResponses) return text("Capabilities respected")
      const declared = ctx.mcpReq.envelope?.["io.modelcontextprotocol/clientCapabilities"] ?? {}
      const inputRequests = {}
      if (declared.elicitation)
        inputRequests.user_name = inputRequired.elicit({
          message: "What is your name?",
          requestedSchema: NAME,
        })
      if (declared.sampling)
        inputRequests.greeting = inputRequired.createMessage({
          messages: [{ role: "user", content: { type: "text", text: "Generate a greeting" } }],
          maxTokens: 50,
        })
      if (declared.roots) inputRequests.client_roots = inputRequired.listRoots()
      return Object.keys(inputRequests).length > 0 ? inputRequired({ inputRequests }) : text("Nothing to ask")
    },
  )
  // Needs sampling: the SDK's seam answers -32021 when the request did not declare it.
  server.registerTool("test_missing_capability", { description: "Needs sampling" }, async (ctx) => {
    if (inputResponse(ctx.mcpReq.inputResponses, "greeting").kind === "sampling") return text("Sampled")
    return inputRequired({
      inputRequests: {
        greeting: inputRequired.createMessage({
          messages: [{ role: "user", content: { type: "text", text: "Generate a greeting" } }],
          maxTokens: 50,
        }),
      },
    })
  })
  for (const name of ["test_streaming_elicitation"])
    server.registerTool(name, { description: "Needs elicitation" }, async (ctx) => {
      if (acceptedContent(ctx.mcpReq.inputResponses, "user_name")) return text("Thanks")
      return inputRequired({
        inputRequests: {
          user_name: inputRequired.elicit({ message: "What is your name?", requestedSchema: NAME }),
        },
      })
    })
  // 2025-11-25 fixtures: logging, and elicitation pushed to the client within the call (on the
  // session's stream).
  server.server.registerCapabilities({ logging: {} })
  server.registerTool("test_tool_with_logging", { description: "Logs three lines" }, async (ctx) => {
    await ctx.mcpReq.log("info", "Tool execution started")
    await new Promise((resolve) => setTimeout(resolve, 50))
    await ctx.mcpReq.log("info", "Tool processing data")
    await new Promise((resolve) => setTimeout(resolve, 50))
    await ctx.mcpReq.log("info", "Tool execution completed")
    return text("Logged three lines")
  })
  server.registerTool(
    "test_elicitation",
    { description: "Asks the user", inputSchema: z.object({ message: z.string() }) },
    async ({ message }, ctx) => {
      // Related to this call, so the request goes out on the call's own stream. Without it the
      // SDK pushes it on the session's standalone GET stream, and drops it when the client has
      // not opened that stream (yet): the call then never returns.
      const answer = await ctx.mcpReq.elicitInput(
        {
          message,
          requestedSchema: {
            type: "object",
            properties: {
              username: { type: "string", description: "User's response" },
              email: { type: "string", description: "User's email address" },
            },
            required: ["username", "email"],
          },
        },
        { relatedRequestId: ctx.mcpReq.id },
      )
      return text(`User response: ${JSON.stringify(answer)}`)
    },
  )
  // Asked through input_required, like toolnexus' own suspensions: 2026-07-28 answers it in
  // band, a 2025-11-25 session gets the request pushed on its stream (the SDK's legacy shim).
  server.registerTool(
    "test_sampling",
    { description: "Asks the client's model", inputSchema: z.object({ prompt: z.string() }) },
    async ({ prompt }, ctx) => {
      const view = inputResponse(ctx.mcpReq.inputResponses, "answer")
      if (view.kind === "sampling") {
        const content = view.result.content
        return text(`LLM response: ${content?.type === "text" ? content.text : JSON.stringify(content)}`)
      }
      return inputRequired({
        inputRequests: {
          answer: inputRequired.createMessage({
            messages: [{ role: "user", content: { type: "text", text: prompt } }],
            maxTokens: 100,
          }),
        },
      })
    },
  )
  const elicitFixture = (name, description, requestedSchema) =>
    server.registerTool(name, { description }, async (ctx) => {
      const view = inputResponse(ctx.mcpReq.inputResponses, "form")
      if (view.kind === "elicit")
        return text(
          `Elicitation completed: action=${view.result.action}, content=${JSON.stringify(view.result.content ?? {})}`,
        )
      return inputRequired({
        inputRequests: { form: inputRequired.elicit({ message: description, requestedSchema }) },
      })
    })
  elicitFixture("test_elicitation_sep1034_defaults", "Defaults for every primitive type (SEP-1034)", {
    type: "object",
    properties: {
      name: { type: "string", description: "User name", default: "John Doe" },
      age: { type: "integer", description: "User age", default: 30 },
      score: { type: "number", description: "User score", default: 95.5 },
      status: {
        type: "string",
        description: "User status",
        enum: ["active", "inactive", "pending"],
        default: "active",
      },
      verified: { type: "boolean", description: "Verification status", default: true },
    },
    required: [],
  })
  elicitFixture("test_elicitation_sep1330_enums", "Every enum variant (SEP-1330)", {
    type: "object",
    properties: {
      untitledSingle: { type: "string", enum: ["option1", "option2", "option3"] },
      titledSingle: {
        type: "string",
        oneOf: [
          { const: "value1", title: "First Option" },
          { const: "value2", title: "Second Option" },
          { const: "value3", title: "Third Option" },
        ],
      },
      legacyEnum: {
        type: "string",
        enum: ["opt1", "opt2", "opt3"],
        enumNames: ["Option One", "Option Two", "Option Three"],
      },
      untitledMulti: { type: "array", items: { type: "string", enum: ["option1", "option2", "option3"] } },
      titledMulti: {
        type: "array",
        items: {
          anyOf: [
            { const: "value1", title: "First Choice" },
            { const: "value2", title: "Second Choice" },
            { const: "value3", title: "Third Choice" },
          ],
        },
      },
    },
    required: [],
  })
  server.registerTool("test_logging_tool", { description: "Logs at info" }, async (ctx) => {
    await ctx.mcpReq.log("info", "a log line")
    return text("Logged")
  })
  // Fixtures with their own requestState: createMcpServer seals it (principal, expiry) and
  // hands it back on the retry; a tampered one is refused before the handler runs.
  const CONFIRM = { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"] }
  for (const name of [
    "test_input_required_result_request_state",
    "test_input_required_result_tampered_state",
  ])
    server.registerTool(name, { description: "Round-trips its state" }, async (ctx) => {
      if (ctx.mcpReq.requestState() === "round-1" && ctx.mcpReq.inputResponses?.confirm)
        return text("state-ok")
      return inputRequired({
        inputRequests: {
          confirm: inputRequired.elicit({ message: "Please confirm", requestedSchema: CONFIRM }),
        },
        requestState: "round-1",
      })
    })
  server.registerTool(
    "test_input_required_result_multi_round",
    { description: "Two rounds" },
    async (ctx) => {
      const state = ctx.mcpReq.requestState()
      const name = acceptedContent(ctx.mcpReq.inputResponses, "step1")
      const color = acceptedContent(ctx.mcpReq.inputResponses, "step2")
      if (state === "round-2" && color) return text(`Done: ${String(color.color)}`)
      if (state === "round-1" && name)
        return inputRequired({
          inputRequests: {
            step2: inputRequired.elicit({
              message: "Step 2: What is your favorite color?",
              requestedSchema: {
                type: "object",
                properties: { color: { type: "string" } },
                required: ["color"],
              },
            }),
          },
          requestState: "round-2",
        })
      return inputRequired({
        inputRequests: {
          step1: inputRequired.elicit({ message: "Step 1: What is your name?", requestedSchema: NAME }),
        },
        requestState: "round-1",
      })
    },
  )
  server.registerTool(
    "test_input_required_result_multiple_inputs",
    { description: "Asks three things" },
    async (ctx) => {
      const responses = ctx.mcpReq.inputResponses ?? {}
      if (
        ctx.mcpReq.requestState() === "asked-all" &&
        ["user_name", "greeting", "client_roots"].every((k) => k in responses)
      )
        return text("All inputs received")
      return inputRequired({
        inputRequests: {
          user_name: inputRequired.elicit({ message: "What is your name?", requestedSchema: NAME }),
          greeting: inputRequired.createMessage({
            messages: [{ role: "user", content: { type: "text", text: "Generate a greeting" } }],
            maxTokens: 50,
          }),
          client_roots: inputRequired.listRoots(),
        },
        requestState: "asked-all",
      })
    },
  )
  server.registerResource(
    "static-text",
    "test://static-text",
    { description: "A static text resource", mimeType: "text/plain" },
    async () => ({
      contents: [
        {
          uri: "test://static-text",
          mimeType: "text/plain",
          text: "This is the content of the static text resource.",
        },
      ],
    }),
  )
  // A subscribable resource: a 2025-11-25 session subscribes (resources/updated reaches it on
  // the session's stream when the resource changes); 2026-07-28 has subscriptions/listen.
  const watched = new Set()
  server.registerResource(
    "watched-resource",
    "test://watched-resource",
    { description: "A resource to subscribe to", mimeType: "text/plain" },
    async () => ({
      contents: [
        { uri: "test://watched-resource", mimeType: "text/plain", text: "Watched resource content." },
      ],
    }),
  )
  server.server.registerCapabilities({ resources: { subscribe: true } })
  server.server.setRequestHandler("resources/subscribe", async (request) => {
    watched.add(request.params.uri)
    return {}
  })
  server.server.setRequestHandler("resources/unsubscribe", async (request) => {
    watched.delete(request.params.uri)
    return {}
  })
  server.registerResource(
    "static-binary",
    "test://static-binary",
    { description: "A static binary resource", mimeType: "image/png" },
    async () => ({ contents: [{ uri: "test://static-binary", mimeType: "image/png", blob: PNG }] }),
  )
  server.registerResource(
    "template",
    new ResourceTemplate("test://template/{id}/data", { list: undefined }),
    { description: "A resource template", mimeType: "application/json" },
    async (uri, { id }) => ({
      contents: [
        {
          uri: uri.href,
          mimeType: "application/json",
          text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }),
        },
      ],
    }),
  )
  server.registerPrompt("test_simple_prompt", { description: "A simple prompt" }, async () => ({
    messages: [{ role: "user", content: { type: "text", text: "This is a simple prompt for testing." } }],
  }))
  server.registerPrompt(
    "test_prompt_with_arguments",
    {
      description: "A prompt with arguments",
      argsSchema: z.object({
        arg1: completable(z.string().describe("First test argument"), (value) =>
          ["paris", "park", "party"].filter((v) => v.startsWith(value)),
        ),
        arg2: z.string().describe("Second test argument"),
      }),
    },
    async ({ arg1, arg2 }) => ({
      messages: [
        {
          role: "user",
          content: { type: "text", text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` },
        },
      ],
    }),
  )
  server.registerPrompt(
    "test_prompt_with_embedded_resource",
    { description: "A prompt with a resource", argsSchema: z.object({ resourceUri: z.string() }) },
    async ({ resourceUri }) => ({
      messages: [
        {
          role: "user",
          content: {
            type: "resource",
            resource: {
              uri: resourceUri,
              mimeType: "text/plain",
              text: "Embedded resource content for testing.",
            },
          },
        },
        { role: "user", content: { type: "text", text: "Please process the embedded resource above." } },
      ],
    }),
  )
  server.registerPrompt("test_prompt_with_image", { description: "A prompt with an image" }, async () => ({
    messages: [
      { role: "user", content: { type: "image", data: PNG, mimeType: "image/png" } },
      { role: "user", content: { type: "text", text: "Please analyze the image above." } },
    ],
  }))
  server.registerPrompt(
    "test_input_required_result_prompt",
    { description: "A prompt that asks for context" },
    async (ctx) => {
      const answer = acceptedContent(ctx.mcpReq.inputResponses, "user_context")
      if (answer)
        return {
          messages: [{ role: "user", content: { type: "text", text: `Context: ${String(answer.context)}` } }],
        }
      return inputRequired({
        inputRequests: {
          user_context: inputRequired.elicit({
            message: "What context should the prompt use?",
            requestedSchema: {
              type: "object",
              properties: { context: { type: "string" } },
              required: ["context"],
            },
          }),
        },
      })
    },
  )
}

const mcp = createMcpServer({
  host,
  agents: ["echo"],
  tools,
  taskAfterMs: 200,
  name: "toolnexus-conformance",
  version: "1.0.0",
  stateKeys: ["conformance-state-key-0123456789abcdef"],
  configure: fixtures,
})
const server = createServer(toNodeListener(mcp.fetch))
server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  process.stdout.write(`http://127.0.0.1:${server.address().port}/mcp\n`)
})
