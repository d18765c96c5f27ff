import { AnswerInvalidError, ApprovalMismatchError, ConfigError } from "../errors.js"
import { isPlainObject } from "../internal/plain-object.js"
import { declined } from "../suspension/call-suspension.js"
import { pending } from "../suspension/pending.js"
import type { ApprovalGrant, GrantQuery } from "../host/approval-grants.js"
import type { Answer, Request, Tool, ToolContext, ToolResult } from "../types.js"
import { type SchemaValidator, compileSchema, formatSchemaIssues } from "./json-schema-validator.js"

// From process.getBuiltinModule, not an ESM import: the first ESM import of node:crypto builds
// its facade, which reads every export and so loads WebCrypto (~7 M instructions on Node 24).
const { hash } = process.getBuiltinModule("node:crypto")

/**
 * Which tool calls first suspend for a human's approval (`kind: "approval"`), shared by MCP
 * servers (§11), the built-in tools (server `"builtin"`, §16) and toolkits (`requireApproval`,
 * §19, where the tool's source — `"native"`, `"http"`, `"agent"`, … — stands for the server):
 * - `true` / `false`: every call / none;
 * - `"destructive"`: calls that change something (for MCP, tools not annotated read-only or
 *   `destructiveHint: false`; for the builtins, bash, write, edit, apply_patch and webfetch to a
 *   host outside `allowHosts`);
 * - a function deciding per call, given the arguments as the model gave them;
 * - per server: `true`, `false`, `"destructive"`, or the tool names that need it (servers not
 *   listed need none).
 */
export type ApprovalPolicy =
  | boolean
  | "destructive"
  | ((server: string, tool: string, args: Record<string, unknown>) => boolean)
  | Record<string, boolean | "destructive" | string[]>

/** @internal Refuses a malformed policy, naming the option. */
export function assertApprovalPolicy(
  policy: unknown,
  field: string,
): asserts policy is ApprovalPolicy | undefined {
  if (policy === undefined || typeof policy === "boolean" || policy === "destructive") return
  if (typeof policy === "function") return
  if (!isPlainObject(policy)) {
    throw new ConfigError(
      `${field} must be a boolean, "destructive", a function or a record by server; got ${JSON.stringify(policy)}`,
    )
  }
  for (const [server, rule] of Object.entries(policy)) {
    const valid =
      typeof rule === "boolean" ||
      rule === "destructive" ||
      (Array.isArray(rule) && rule.every((t) => typeof t === "string"))
    if (!valid) {
      throw new ConfigError(
        `${field}.${server} must be true, false, "destructive" or a list of tool names; got ${JSON.stringify(rule)}`,
      )
    }
  }
}

/**
 * @internal True when `policy` wants approval for this call; `destructive` says whether the call
 * changes something, for the `"destructive"` rule.
 */
export function approvalNeeded(
  policy: ApprovalPolicy | undefined,
  server: string,
  tool: string,
  args: Record<string, unknown>,
  destructive: () => boolean,
): boolean {
  if (policy === undefined || policy === false) return false
  if (policy === true) return true
  if (policy === "destructive") return destructive()
  if (typeof policy === "function") return policy(server, tool, args) === true
  const rule = policy[server]
  if (rule === undefined || rule === false) return false
  if (rule === true) return true
  if (rule === "destructive") return destructive()
  return rule.includes(tool)
}

// ---- Declarative approval (§19): one gate for any tool of a toolkit ------------------------

/** What an {@link ApprovalPolicyHook} is asked about: one call that would need approval. */
export interface ApprovalCall {
  /** The tool's name. */
  tool: string
  /** The arguments as the model gave them (validated against the tool's schema). */
  args: Record<string, unknown>
  /**
   * The agent path of the runtime handle making the call (its id's segments, from `"root"`, as
   * a request's `data.path`); `[]` for a plain conversation.
   */
  path: string[]
  /** The conversation the call runs in (see `ToolContext.conversationId`), when known. */
  conversationId: string | undefined
}

/** A policy's verdict on a call: run it, decline it, or ask a human. */
export type ApprovalVerdict = "allow" | "deny" | "ask"

/**
 * Policy as code for calls that need approval: `"allow"` runs the call without asking,
 * `"deny"` answers it `declined: denied by policy`, `"ask"` suspends for a human. A throw, a
 * rejection or any other value counts as `"ask"`.
 */
export type ApprovalPolicyHook = (call: ApprovalCall) => ApprovalVerdict | Promise<ApprovalVerdict>

/** @internal A toolkit's approval options, as the gate reads them. */
export interface ToolkitApproval {
  requireApproval: ApprovalPolicy | undefined
  approvalPolicy: ApprovalPolicyHook | undefined
}

/** @internal Finds the grant (§19) covering a call, from the run's store. */
export type GrantLookup = (query: GrantQuery) => Promise<ApprovalGrant | undefined>

/** What `metadata.approval` of a gated call's result records. */
interface ApprovalRecord {
  decision: "approved" | "allowed" | "denied" | "granted"
  by: "human" | "policy" | "grant"
  requestId?: string
  /** With `by: "grant"`: the grant that allowed the call. */
  grantId?: string
  /** With `by: "grant"`: the approved request whose answer recorded the grant. */
  grantedBy?: string
  argsHash?: string
  /** The arguments the approver wrote, when they replaced the model's. */
  editedArgs?: Record<string, unknown>
}

/** Sources that ask through their own policy (a server's or `builtins.requireApproval`), or never run here. */
const OWN_GATE = new Set(["mcp", "builtin", "relay"])

/**
 * @internal JSON with object keys sorted (by UTF-16 code units) and `undefined` members
 * dropped: the same value always gives the same text, however its keys were ordered.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value))
    return `[${value.map((v) => (v === undefined ? "null" : canonicalJson(v))).join(",")}]`
  if (isPlainObject(value)) {
    const keys = Object.keys(value)
      .filter((k) => value[k] !== undefined)
      .sort()
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(",")}}`
  }
  return JSON.stringify(value) ?? "null"
}

/** @internal The sha-256 (hex) of a call's canonical arguments: what binds an approval to the call. */
export function argsHash(args: Record<string, unknown>): string {
  // One-shot: no Hash object and stream per call (it runs twice per approved call).
  return hash("sha256", canonicalJson(args), "hex")
}

/** @internal True when calls to `tool` go through {@link gatedExecute} in this toolkit. */
export function isGated(tool: Tool, approval: ToolkitApproval | undefined): boolean {
  if (OWN_GATE.has(tool.source)) return false
  const declared = tool.needsApproval
  if (declared !== undefined && declared !== false) return true
  const policy = approval?.requireApproval
  return policy !== undefined && policy !== false
}

/** @internal True for a request {@link gatedExecute} made (the only approvals it honours). */
export function isGateRequest(request: Request | undefined): request is Request {
  return request?.kind === "approval" && typeof request.data?.argsHash === "string"
}

/**
 * @internal True when the gate request was asked for this call of `tool`: a request a
 * sub-agent passed up names the leaf's tool, while the call retried with it is the parent's
 * delegating call (`task`, an agent tool), which must get the answer as it is.
 */
export function asksFor(request: Request, tool: string, callId: string | undefined): boolean {
  const asked = request.data?.callId
  return request.data?.tool === tool && (callId === undefined || asked === undefined || asked === callId)
}

/**
 * @internal The declarative approval gate, before `run`:
 * - a retry carrying the answer to the gate's own request: declined ⇒ the loop's `declined:`
 *   result; approved ⇒ `run` with the arguments the approver saw (or the edited ones), with
 *   `ctx.answer`/`ctx.request` removed — the tool never sees its approval;
 * - a first call that needs approval (the tool's `needsApproval`, the toolkit's
 *   `requireApproval`): invalid arguments are returned as such (nobody is asked about a call
 *   that cannot run); the policy hook, when given, allows, denies or asks; on "ask" a grant of
 *   the run's store covering the call runs it (recorded as granted); else asking suspends with
 *   `kind: "approval"` and `data {tool, args, callId, argsHash}`.
 * - otherwise `run` as it is.
 *
 * @throws ApprovalMismatchError / AnswerInvalidError as {@link approvedArguments} does.
 */
export async function gatedExecute(
  tool: Tool,
  args: Record<string, unknown>,
  ctx: ToolContext,
  approval: ToolkitApproval | undefined,
  run: (args: Record<string, unknown>, ctx: ToolContext) => ToolResult | Promise<ToolResult>,
  grants?: GrantLookup,
): Promise<ToolResult> {
  const { answer, request } = ctx
  if (
    answer &&
    isGateRequest(request) &&
    answer.id === request.id &&
    asksFor(request, tool.name, ctx.callId)
  ) {
    if (!answer.ok) return declined(request, answer)
    const approved = approvedArguments(tool, request, answer, args)
    const { answer: _answer, request: _request, ...plain } = ctx
    const record: ApprovalRecord = { decision: "approved", by: "human", requestId: request.id }
    record.argsHash = request.data?.argsHash as string
    if (approved !== args) record.editedArgs = approved
    return withApproval(await run(approved, plain), record)
  }
  if (!(await needsApproval(tool, args, ctx, approval))) return run(args, ctx)
  const issues = validatorOf(tool)?.(args, "args")
  if (issues?.length) return { output: `invalid arguments: ${formatSchemaIssues(issues)}`, isError: true }
  const verdict = await verdictOf(approval?.approvalPolicy, tool.name, args, ctx)
  if (verdict === "allow") return withApproval(await run(args, ctx), { decision: "allowed", by: "policy" })
  if (verdict === "deny") {
    return {
      output: "declined: denied by policy",
      isError: true,
      metadata: { approval: { decision: "denied", by: "policy" } },
    }
  }
  const grant = await grantFor(grants, tool.name, ctx.conversationId)
  if (grant) {
    return withApproval(await run(args, ctx), {
      decision: "granted",
      by: "grant",
      grantId: grant.id,
      grantedBy: grant.grantedBy,
    })
  }
  const data: Record<string, unknown> = { tool: tool.name, args, argsHash: argsHash(args) }
  if (ctx.callId !== undefined) data.callId = ctx.callId
  if (tool.editableArgs === true) data.editableArgs = true
  return pending({ kind: "approval", prompt: promptOf(tool, args), data })
}

/** The tool's own approval prompt, or the default when it has none (or it fails). */
function promptOf(tool: Tool, args: Record<string, unknown>): string {
  try {
    const own = tool.approvalPrompt?.(args)
    if (typeof own === "string" && own !== "") return own
  } catch {
    // The default below still says what is decided.
  }
  return `Approve ${tool.name} with ${JSON.stringify(args)}?`
}

/**
 * @internal The arguments an approved call runs with: the call's own when they hash to the
 * request's `argsHash`, or the approver's `answer.data.args` when the tool allows edits and
 * they fit its schema. Checked before anything runs (a resume checks the halted call first).
 *
 * @throws ApprovalMismatchError when the call's arguments are not the ones approved;
 *   AnswerInvalidError for edited arguments the tool does not allow or its schema refuses.
 */
export function approvedArguments(
  tool: Tool | undefined,
  request: Request,
  answer: Answer,
  args: Record<string, unknown>,
): Record<string, unknown> {
  const name = tool?.name ?? String(request.data?.tool)
  const expected = request.data?.argsHash as string
  const actual = argsHash(args)
  if (actual !== expected) throw new ApprovalMismatchError(request.id, name, expected, actual)
  const edited = answer.data?.args
  if (edited === undefined) return args
  if (tool?.editableArgs !== true) {
    throw new AnswerInvalidError(
      `answer.data.args: tool ${name} does not take edited arguments (editableArgs is not set)`,
    )
  }
  if (!isPlainObject(edited)) {
    throw new AnswerInvalidError(
      `answer.data.args must be an object of arguments, got ${JSON.stringify(edited)}`,
    )
  }
  const issues = validatorOf(tool)?.(edited, "answer.data.args")
  if (issues?.length) {
    throw new AnswerInvalidError(
      `answer.data.args do not fit the schema of ${name}: ${formatSchemaIssues(issues)}`,
    )
  }
  return edited
}

/** The tool's own declaration, then the toolkit's `requireApproval`; a throwing declaration asks. */
async function needsApproval(
  tool: Tool,
  args: Record<string, unknown>,
  ctx: ToolContext,
  approval: ToolkitApproval | undefined,
): Promise<boolean> {
  const declared = tool.needsApproval
  if (declared === true) return true
  if (typeof declared === "function") {
    try {
      if ((await declared(args, ctx)) === true) return true
    } catch {
      return true
    }
  }
  // Host tools carry no read-only marking: for them "destructive" means every call.
  return approvalNeeded(approval?.requireApproval, tool.source, tool.name, args, () => true)
}

async function verdictOf(
  hook: ApprovalPolicyHook | undefined,
  tool: string,
  args: Record<string, unknown>,
  ctx: ToolContext,
): Promise<ApprovalVerdict> {
  if (!hook) return "ask"
  try {
    const verdict = await hook({
      tool,
      args,
      path: pathOf(ctx.conversationId),
      conversationId: ctx.conversationId,
    })
    return verdict === "allow" || verdict === "deny" ? verdict : "ask"
  } catch {
    return "ask"
  }
}

/**
 * A runtime handle's path: its conversation is `<namespace>/<handle id>` and every handle id
 * starts at the `root` segment; a plain conversation has none.
 */
function pathOf(conversationId: string | undefined): string[] {
  const segments = conversationId?.split("/") ?? []
  const root = segments.indexOf("root", 1)
  return root < 0 ? [] : segments.slice(root)
}

/** The grant covering the call; a failing lookup asks (a grant only ever saves a question). */
async function grantFor(
  grants: GrantLookup | undefined,
  tool: string,
  conversationId: string | undefined,
): Promise<ApprovalGrant | undefined> {
  if (!grants || conversationId === undefined) return undefined
  try {
    return await grants({ tool, conversationId })
  } catch {
    return undefined
  }
}

function withApproval(result: ToolResult, approval: ApprovalRecord): ToolResult {
  return { ...result, metadata: { ...result.metadata, approval } }
}

/** Compiled schemas by tool; `null` for one the validator cannot compile (then nothing is checked here). */
const validators = new WeakMap<Tool, SchemaValidator | null>()

function validatorOf(tool: Tool | undefined): SchemaValidator | undefined {
  if (!tool) return undefined
  let validator = validators.get(tool)
  if (validator === undefined) {
    try {
      validator = compileSchema(tool.inputSchema)
    } catch {
      validator = null
    }
    validators.set(tool, validator)
  }
  return validator ?? undefined
}
