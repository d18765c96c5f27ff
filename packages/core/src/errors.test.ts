import { describe, expect, it } from "vitest"
import {
  AbortError,
  AnswerConflictError,
  AnswerExpiredError,
  AnswerInvalidError,
  ApprovalMismatchError,
  AnswerMismatchError,
  ConfigError,
  LLMHttpError,
  LLMResponseError,
  LLMStreamError,
  NetworkError,
  SchemaVersionError,
  ConversationPendingError,
  HostUnsupportedError,
  StoreError,
  ToolnexusError,
  type ToolnexusErrorCode,
  UnknownRequestError,
  isToolnexusError,
} from "./errors.js"
import { EngineRunError } from "./client/engine-connection.js"
import { StepTooLargeError } from "./client/executor.js"

type ErrorClass = abstract new (...args: any[]) => ToolnexusError

interface Case {
  cls: ErrorClass & { isInstance(value: unknown): boolean }
  make: () => ToolnexusError
  name: string
  code: string
  message: RegExp
}

const cases: Case[] = [
  {
    cls: ConfigError,
    make: () => new ConfigError("bad option"),
    name: "ConfigError",
    code: "TNX_CONFIG",
    message: /^bad option$/,
  },
  {
    cls: LLMHttpError,
    make: () => new LLMHttpError(429, '{"error":"slow down"}'),
    name: "LLMHttpError",
    code: "TNX_LLM_HTTP",
    message: /^LLM endpoint answered HTTP 429: \{"error":"slow down"\}$/,
  },
  {
    cls: LLMResponseError,
    make: () => new LLMResponseError("no choices"),
    name: "LLMResponseError",
    code: "TNX_LLM_RESPONSE",
    message: /^no choices$/,
  },
  {
    cls: LLMStreamError,
    make: () => new LLMStreamError({ type: "overloaded_error", message: "Overloaded" }),
    name: "LLMStreamError",
    code: "TNX_LLM_STREAM",
    message: /^the LLM stream reported overloaded_error: Overloaded$/,
  },
  {
    cls: NetworkError,
    make: () => new NetworkError("connection refused"),
    name: "NetworkError",
    code: "TNX_NETWORK",
    message: /^connection refused$/,
  },
  {
    cls: AbortError,
    make: () => new AbortError(),
    name: "AbortError",
    code: "TNX_ABORTED",
    message: /^the run was aborted$/,
  },
  {
    cls: AnswerMismatchError,
    make: () => new AnswerMismatchError("pnd-b", "pnd-a"),
    name: "AnswerMismatchError",
    code: "TNX_ANSWER_MISMATCH",
    message: /does not echo the pending request id "pnd-a".*nothing was changed/,
  },
  {
    cls: AnswerExpiredError,
    make: () => new AnswerExpiredError("pnd-a", "2024-01-01T00:00:00Z"),
    name: "AnswerExpiredError",
    code: "TNX_ANSWER_EXPIRED",
    message: /pnd-a expired at 2024-01-01T00:00:00Z/,
  },
  {
    cls: AnswerInvalidError,
    make: () => new AnswerInvalidError("answer.ok must be a boolean, got null"),
    name: "AnswerInvalidError",
    code: "TNX_ANSWER_INVALID",
    message: /^invalid answer: answer.ok must be a boolean, got null$/,
  },
  {
    cls: ApprovalMismatchError,
    make: () => new ApprovalMismatchError("pnd-a", "pay", "aa", "bb"),
    name: "ApprovalMismatchError",
    code: "TNX_APPROVAL_MISMATCH",
    message:
      /approval pnd-a for pay does not cover this call: its arguments hash to bb, the approver saw aa; nothing was run/,
  },
  {
    cls: AnswerConflictError,
    make: () => new AnswerConflictError("pnd-a"),
    name: "AnswerConflictError",
    code: "TNX_ANSWER_CONFLICT",
    message: /^the answer to request pnd-a was not applied: /,
  },
  {
    cls: UnknownRequestError,
    make: () => new UnknownRequestError("pnd-x"),
    name: "UnknownRequestError",
    code: "TNX_UNKNOWN_REQUEST",
    message: /^unknown request "pnd-x": no suspended run holds it$/,
  },
  {
    cls: StoreError,
    make: () => new StoreError("row 3 is corrupt"),
    name: "StoreError",
    code: "TNX_STORE",
    message: /^row 3 is corrupt$/,
  },
  {
    cls: SchemaVersionError,
    make: () => new SchemaVersionError("the snapshot", 9, [1, 2]),
    name: "SchemaVersionError",
    code: "TNX_SCHEMA_VERSION",
    message: /^the snapshot has schema version 9; this version of toolnexus reads 1, 2\./,
  },
  {
    cls: ConversationPendingError,
    make: () => new ConversationPendingError("c1", { id: "pnd-a", kind: "approval", prompt: "Pay?" }),
    name: "ConversationPendingError",
    code: "TNX_CONVERSATION_PENDING",
    message: /^conversation "c1" waits on request pnd-a \(approval: "Pay\?"\)/,
  },
  {
    cls: EngineRunError,
    make: () => new EngineRunError("wf-1", "failed: boom"),
    name: "EngineRunError",
    code: "TNX_ENGINE_RUN",
    message: /^run "wf-1" failed: boom$/,
  },
  {
    cls: HostUnsupportedError,
    make: () => new HostUnsupportedError("connectRestate", "events", "runs stream in the workers"),
    name: "HostUnsupportedError",
    code: "TNX_HOST_UNSUPPORTED",
    message: /^connectRestate does not support events: runs stream in the workers$/,
  },
  {
    cls: StepTooLargeError,
    make: () => new StepTooLargeError("llm:3", 2048, 1024),
    name: "StepTooLargeError",
    code: "TNX_STEP_TOO_LARGE",
    message: /^step llm:3 is 2048 bytes, over the executor's maxStepBytes of 1024$/,
  },
]

/**
 * Every code of every package, pinned: a new code must be added to the union and here (the
 * `Record` fails to typecheck when the union has a code this list lacks, or the reverse).
 */
const ALL_CODES: Record<ToolnexusErrorCode, string> = {
  TNX_CONFIG: "core",
  TNX_LLM_HTTP: "core",
  TNX_LLM_RESPONSE: "core",
  TNX_LLM_STREAM: "core",
  TNX_NETWORK: "core",
  TNX_ABORTED: "core",
  TNX_ANSWER_MISMATCH: "core",
  TNX_ANSWER_EXPIRED: "core",
  TNX_ANSWER_INVALID: "core",
  TNX_ANSWER_CONFLICT: "core",
  TNX_APPROVAL_MISMATCH: "core",
  TNX_UNKNOWN_REQUEST: "core",
  TNX_STORE: "core",
  TNX_SCHEMA_VERSION: "core",
  TNX_CONVERSATION_PENDING: "core",
  TNX_ENGINE_RUN: "core",
  TNX_HOST_UNSUPPORTED: "core",
  TNX_STEP_TOO_LARGE: "core",
  TNX_RUNTIME: "agents",
  TNX_INBOX_FULL: "agents",
  TNX_CLOSED: "agents",
  TNX_MCP_CONNECT: "mcp",
  TNX_MCP_TIMEOUT: "mcp",
  TNX_A2A_CONNECT: "a2a",
  TNX_RUNTIME_HELD: "durable",
  TNX_CLAIM_LOST: "durable",
  TNX_RUNTIME_COLLISION: "durable",
}

describe("one error scheme", () => {
  it("the code union lists every package's codes, core's own as the core table has them", () => {
    const core = Object.entries(ALL_CODES)
      .filter(([, pkg]) => pkg === "core")
      .map(([code]) => code)
    expect(core.sort()).toEqual(cases.map((c) => c.code).sort())
    expect(Object.keys(ALL_CODES)).toHaveLength(27)
  })

  it("isToolnexusError recognises the family, and a code when given", () => {
    const error = new AnswerConflictError("pnd-a")
    expect(isToolnexusError(error)).toBe(true)
    expect(isToolnexusError(error, "TNX_ANSWER_CONFLICT")).toBe(true)
    expect(isToolnexusError(error, "TNX_STORE")).toBe(false)
    // Codes of errors outside errors.ts narrow too (a code missing from the union fails to typecheck).
    expect(isToolnexusError(new StepTooLargeError("tool:1", 9, 8), "TNX_STEP_TOO_LARGE")).toBe(true)
    expect(isToolnexusError(new EngineRunError("wf", "failed"), "TNX_ENGINE_RUN")).toBe(true)
    expect(isToolnexusError(new Error("x"))).toBe(false)
    expect(isToolnexusError({ code: "TNX_STORE", message: "x" })).toBe(false)
    expect(isToolnexusError(undefined)).toBe(false)
  })

  it("each class stamps its Symbol.for marker, so another copy's subclass is still recognised", () => {
    const error = new StoreError("down")
    expect((error as unknown as Record<symbol, unknown>)[Symbol.for("toolnexus.error.TNX_STORE")]).toBe(true)
    // An error from another copy: a plain object with the markers, no shared prototype.
    const foreign = {
      code: "TNX_ANSWER_CONFLICT",
      message: "x",
      [Symbol.for("toolnexus.error")]: true,
      [Symbol.for("toolnexus.error.TNX_ANSWER_CONFLICT")]: true,
    }
    expect(AnswerConflictError.isInstance(foreign)).toBe(true)
    expect(StoreError.isInstance(foreign)).toBe(false)
    expect(isToolnexusError(foreign, "TNX_ANSWER_CONFLICT")).toBe(true)
    // A subclass with no family of its own carries its parent's marker.
    class CorruptRow extends StoreError {}
    const corrupt = new CorruptRow("bad row")
    expect(StoreError.isInstance(corrupt)).toBe(true)
    expect(CorruptRow.isInstance(corrupt)).toBe(true)
    expect(CorruptRow.isInstance(new StoreError("x"))).toBe(false)
  })
})

describe("error classes", () => {
  it.each(cases.map((c) => [c.name, c] as const))("%s has its name, code and message", (_name, c) => {
    const error = c.make()
    expect(error.name).toBe(c.name)
    expect(error.code).toBe(c.code)
    expect(error.message).toMatch(c.message)
    expect(String(error.stack).split("\n")[0]).toBe(`${c.name}: ${error.message.split("\n")[0]}`)
    expect(error).toBeInstanceOf(Error)
    expect(error).toBeInstanceOf(ToolnexusError)
    expect(error).toBeInstanceOf(c.cls)
    expect(ToolnexusError.isInstance(error)).toBe(true)
    expect(c.cls.isInstance(error)).toBe(true)
  })

  it("codes are unique per class", () => {
    const codes = cases.map((c) => c.code)
    expect(new Set(codes).size).toBe(codes.length)
  })

  it("a subclass does not recognise its siblings", () => {
    for (const a of cases) {
      for (const b of cases) {
        if (a === b) continue
        const error = a.make()
        expect(b.cls.isInstance(error), `${b.name}.isInstance(${a.name})`).toBe(false)
        expect(error instanceof b.cls, `${a.name} instanceof ${b.name}`).toBe(false)
      }
    }
  })

  it("the base class is recognised through a global marker, e.g. from another copy of the package", () => {
    const lookAlike = Object.assign(new Error("from another copy"), {
      code: "TNX_NETWORK",
      [Symbol.for("toolnexus.error")]: true,
    })
    expect(ToolnexusError.isInstance(lookAlike)).toBe(true)
    expect(lookAlike instanceof ToolnexusError).toBe(true)
    // A subclass recognises the look-alike by its stable code, and only its own family.
    expect(NetworkError.isInstance(lookAlike)).toBe(true)
    expect(AbortError.isInstance(lookAlike)).toBe(false)
    const bare = { [Symbol.for("toolnexus.error")]: true }
    expect(ToolnexusError.isInstance(bare)).toBe(true)
    expect(bare instanceof ToolnexusError).toBe(true)
  })

  it("plain errors and other values are not toolnexus errors", () => {
    for (const value of [
      new Error("plain"),
      new TypeError("type"),
      { code: "TNX_CONFIG", name: "ConfigError", message: "fake" },
      { [Symbol.for("toolnexus.error")]: "yes" },
      null,
      undefined,
      "TNX_CONFIG",
      42,
    ]) {
      expect(ToolnexusError.isInstance(value)).toBe(false)
      expect(ConfigError.isInstance(value)).toBe(false)
      expect(value instanceof ToolnexusError).toBe(false)
    }
  })

  it("keeps the cause", () => {
    const cause = new Error("socket hang up")
    expect(new NetworkError("unreachable", { cause }).cause).toBe(cause)
    expect(new StoreError("write failed", { cause }).cause).toBe(cause)
  })

  it("LLMHttpError keeps the status, an excerpt of the body and whether it is retryable", () => {
    const retryable = [408, 409, 429, 500, 501, 502, 503, 504, 529]
    for (const status of [400, 401, 403, 404, 408, 409, 422, 429, 500, 501, 502, 503, 504, 529]) {
      expect(new LLMHttpError(status, "").isRetryable, String(status)).toBe(retryable.includes(status))
    }
    const long = new LLMHttpError(400, "y".repeat(2_000))
    expect(long.status).toBe(400)
    expect(long.bodyExcerpt.startsWith("y".repeat(500))).toBe(true)
    expect(long.bodyExcerpt.length).toBeLessThanOrEqual(501)
    expect(long.message.length).toBeLessThan(600)
    // The provider's x-should-retry overrides the status either way.
    expect(new LLMHttpError(400, "", { shouldRetry: true }).isRetryable).toBe(true)
    expect(new LLMHttpError(503, "", { shouldRetry: false }).isRetryable).toBe(false)
    expect(new LLMHttpError(429, "", { retryAfterMs: 1500 }).retryAfterMs).toBe(1500)
  })

  it("LLMStreamError retries transient types only, and never after output", () => {
    for (const type of [
      "overloaded_error",
      "api_error",
      "rate_limit_error",
      "server_error",
      "rate_limit_exceeded",
    ])
      expect(new LLMStreamError({ type, message: "m" }).isRetryable, type).toBe(true)
    for (const type of ["insufficient_quota", "invalid_request_error", "authentication_error"])
      expect(new LLMStreamError({ type, message: "m" }).isRetryable, type).toBe(false)
    const late = new LLMStreamError({ type: "overloaded_error", message: "Overloaded" }, true)
    expect(late.isRetryable).toBe(false)
    expect(late.message).toContain("after output")
    expect(late.errorType).toBe("overloaded_error")
    expect(new LLMStreamError({ code: "rate_limit_exceeded" }).errorCode).toBe("rate_limit_exceeded")
    // A gateway's numeric code is read as the HTTP status it stands for.
    expect(new LLMStreamError({ code: "502", message: "upstream" }).isRetryable).toBe(true)
    expect(new LLMStreamError({ code: "400", message: "bad" }).isRetryable).toBe(false)
  })

  it("carries the ids of the answer errors", () => {
    const mismatch = new AnswerMismatchError("pnd-b", "pnd-a")
    expect([mismatch.answerId, mismatch.pendingId]).toEqual(["pnd-b", "pnd-a"])
    expect(new AnswerConflictError("pnd-c").requestId).toBe("pnd-c")
    expect(new UnknownRequestError("pnd-d").requestId).toBe("pnd-d")
    const expired = new AnswerExpiredError("pnd-e", "2024-01-01T00:00:00Z")
    expect([expired.requestId, expired.expiresAt]).toEqual(["pnd-e", "2024-01-01T00:00:00Z"])
    const version = new SchemaVersionError("x", 3, [1])
    expect([version.found, version.supported]).toEqual([3, [1]])
  })

  it("a subclass defined outside core is an instance of the base and of itself only", () => {
    class CustomError extends ToolnexusError {
      override readonly name = "CustomError"
      constructor() {
        super("custom_code", "custom")
      }
    }
    const error = new CustomError()
    expect(error).toBeInstanceOf(ToolnexusError)
    expect(CustomError.isInstance(error)).toBe(true)
    expect(CustomError.isInstance(new ConfigError("x"))).toBe(false)
    expect(ConfigError.isInstance(error)).toBe(false)
    expect(error.code).toBe("custom_code")
  })
})
