import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto"
import { ConfigError } from "@toolnexus/core"

/** What a sealed `requestState` names: never a transcript, only where to find the run. */
export interface SealedRunState {
  /** The MCP tool the call was made to: a state is good only for a retry of that tool. */
  tool: string
  /** The hosted run. */
  runId: string
  /** The open requests asked for, with their kinds (the answer's shape follows the kind). */
  requests: { id: string; kind: string }[]
  /** Whom it was sealed for: a retry by anyone else is refused. */
  principal: string
  /** Milliseconds since the epoch after which it is refused. */
  expiresAt: number
}

/**
 * The state a handler registered through `configure` returned, sealed the same way (bound to
 * the principal, with an expiry), so it comes back untouched or not at all.
 */
export interface SealedHandlerState {
  /** The handler's own state, handed back to it as `ctx.mcpReq.requestState()`. */
  state: string
  /** Whom it was sealed for. */
  principal: string
  /** Milliseconds since the epoch after which it is refused. */
  expiresAt: number
}

/**
 * A task's id (the tasks extension): sealed like a state, so any server instance opens it and
 * finds the run, and only its principal can read, answer or cancel it.
 */
export interface SealedTask {
  /** Marks a task id (a state is never taken for one, nor one for a state). */
  task: true
  /** The MCP tool the call was made to. */
  tool: string
  /** The hosted run the task is. */
  runId: string
  /** Whom it was sealed for. */
  principal: string
  /** When the task was created, in ms since the epoch. */
  createdAt: number
  /** Milliseconds since the epoch after which it is refused (the task's TTL). */
  expiresAt: number
}

/** Any sealed value. */
export type SealedState = SealedRunState | SealedHandlerState | SealedTask

/** Why a state is refused; it goes to `onerror` only, never on the wire. */
export class StateRefusedError extends Error {
  override readonly name = "StateRefusedError"
  /**
   * @param reason Why it was refused (`version`: sealed in a format this server does not open).
   * @param version With `version`: the format the wire string names, e.g. `"tnx2"`.
   */
  constructor(
    readonly reason: "malformed" | "sealed" | "expired" | "principal" | "version",
    readonly version?: string,
  ) {
    super(
      reason === "version"
        ? `requestState refused: sealed in format ${JSON.stringify(version)}; this server opens ${JSON.stringify(VERSION)}`
        : `requestState refused: ${reason}`,
    )
  }
}

const VERSION = "tnx1"
const IV_BYTES = 12
const TAG_BYTES = 16
// Binds the ciphertext to its purpose: a key shared with another use of AES-GCM cannot be
// made to open this format's states, nor this format's states taken for theirs.
const AAD = Buffer.from("toolnexus.mcp.requestState.v1")
const HKDF_SALT = Buffer.from("toolnexus.mcp.requestState")
const HKDF_INFO = Buffer.from("aes-256-gcm key v1")
const MIN_KEY_BYTES = 32
// IVs are cut from blocks of CSPRNG bytes, 128 IVs a block: a sync `randomBytes` builds a crypto
// job each call, which cost more than the sealing's cipher work. Each block is a new buffer and
// each of its bytes is handed out once, so no two seals share an IV.
const IV_BLOCK_BYTES = 128 * IV_BYTES
let ivBlock = Buffer.alloc(0)
let ivAt = 0

function nextIv(): Buffer {
  if (ivAt + IV_BYTES > ivBlock.length) {
    ivBlock = randomBytes(IV_BLOCK_BYTES)
    ivAt = 0
  }
  const iv = ivBlock.subarray(ivAt, ivAt + IV_BYTES)
  ivAt += IV_BYTES
  return iv
}

// How many of its own recent seals a sealer remembers (see `RequestStateSealer.#issued`): a
// call's retry comes back within seconds, so this covers that many calls in flight at once.
const ISSUED_LIMIT = 512

/**
 * Seals and opens `requestState` with AES-256-GCM under keys derived (HKDF-SHA256) from the
 * configured secrets: the first seals, every one opens, so a key can be rotated in without
 * refusing the states already in flight.
 *
 * @internal
 */
export class RequestStateSealer {
  readonly #keys: Buffer[]
  readonly #now: () => number
  /**
   * The plaintext of this sealer's most recent seals, by their exact wire string, each taken at
   * its first `open`: a retry coming back to the server that sealed its state is opened without
   * a second cipher (a GCM decipher costs about as much as the seal). Only a byte-identical
   * copy of what this sealer issued is found here, so its tag needs no check; the principal and
   * expiry checks run as for any other state. Bounded: the oldest goes first.
   */
  readonly #issued = new Map<string, string>()

  readonly #decipher: typeof createDecipheriv

  /**
   * @param stateKeys The configured secrets (see `createMcpServer`'s `stateKeys`).
   * @param now The clock expiry is checked against.
   * @param decipher Node's `createDecipheriv` (tests count the ciphers a retry costs).
   */
  constructor(
    stateKeys: readonly (string | Uint8Array)[],
    now: () => number = Date.now,
    decipher: typeof createDecipheriv = createDecipheriv,
  ) {
    if (!Array.isArray(stateKeys) || stateKeys.length === 0)
      throw new ConfigError(
        "createMcpServer: stateKeys must list at least one key (the first seals, all open)",
      )
    this.#keys = stateKeys.map((key, i) => {
      const bytes =
        typeof key === "string" ? Buffer.from(key, "utf8") : key instanceof Uint8Array ? key : undefined
      if (bytes === undefined || bytes.length < MIN_KEY_BYTES)
        throw new ConfigError(
          `createMcpServer: stateKeys[${i}] must be a string or Uint8Array of at least 32 bytes`,
        )
      return Buffer.from(hkdfSync("sha256", bytes, HKDF_SALT, HKDF_INFO, 32))
    })
    this.#now = now
    this.#decipher = decipher
  }

  /** The wire string for `state`, sealed under the first key. */
  seal(state: SealedState): string {
    const iv = nextIv()
    const cipher = createCipheriv("aes-256-gcm", this.#keys[0] as Buffer, iv, { authTagLength: TAG_BYTES })
    cipher.setAAD(AAD)
    const plain = JSON.stringify(state)
    const sealed = cipher.update(plain, "utf8")
    // GCM is a stream mode: `final` adds no bytes, only computes the tag.
    cipher.final()
    const wire = `${VERSION}.${Buffer.concat([iv, sealed, cipher.getAuthTag()]).toString("base64url")}`
    const issued = this.#issued
    issued.set(wire, plain)
    if (issued.size > ISSUED_LIMIT) issued.delete(issued.keys().next().value as string)
    return wire
  }

  /**
   * Opens a wire string sealed by any current key and checks it is for `principal` and not
   * expired (the caller checks it is for its tool).
   *
   * @throws StateRefusedError naming why.
   */
  open(wire: string, expect: { principal: string }): SealedState {
    const issued = this.#issued.get(wire)
    if (issued !== undefined) {
      this.#issued.delete(wire)
      return this.#checked(issued, expect)
    }
    const dot = wire.indexOf(".")
    const format = dot < 0 ? undefined : wire.slice(0, dot)
    // A newer server's format during a rolling deploy: refused by name, never misread.
    if (format !== undefined && format !== VERSION && /^tnx\d+$/.test(format))
      throw new StateRefusedError("version", format)
    if (format !== VERSION) throw new StateRefusedError("malformed")
    const raw = Buffer.from(wire.slice(dot + 1), "base64url")
    if (raw.length < IV_BYTES + TAG_BYTES + 2) throw new StateRefusedError("malformed")
    const iv = raw.subarray(0, IV_BYTES)
    const tag = raw.subarray(raw.length - TAG_BYTES)
    const ciphertext = raw.subarray(IV_BYTES, raw.length - TAG_BYTES)
    let plain: string | undefined
    for (const key of this.#keys) {
      try {
        const decipher = this.#decipher("aes-256-gcm", key, iv, { authTagLength: TAG_BYTES })
        decipher.setAAD(AAD)
        decipher.setAuthTag(tag)
        // GCM's `final` adds no bytes: it checks the tag (and throws for a wrong key).
        const opened = decipher.update(ciphertext)
        decipher.final()
        plain = opened.toString("utf8")
        break
      } catch {
        // not this key: try the next (rotation)
      }
    }
    if (plain === undefined) throw new StateRefusedError("sealed")
    return this.#checked(plain, expect)
  }

  /** The state in `plain` (opened text), if well-formed, for `principal` and not expired. */
  #checked(plain: string, expect: { principal: string }): SealedState {
    const state = parseState(plain)
    if (state === undefined) throw new StateRefusedError("malformed")
    if (state.principal !== expect.principal) throw new StateRefusedError("principal")
    if (!(this.#now() < state.expiresAt)) throw new StateRefusedError("expired")
    return state
  }
}

function parseState(plain: string): SealedState | undefined {
  let value: unknown
  try {
    value = JSON.parse(plain)
  } catch {
    return undefined
  }
  const state = value as Partial<SealedRunState & SealedHandlerState & SealedTask> | null
  if (typeof state?.principal !== "string" || typeof state.expiresAt !== "number") return undefined
  if (typeof state.state === "string") return state as SealedHandlerState
  if (state.task === true)
    return typeof state.tool === "string" &&
      typeof state.runId === "string" &&
      typeof state.createdAt === "number"
      ? (state as SealedTask)
      : undefined
  if (
    typeof state.tool !== "string" ||
    typeof state.runId !== "string" ||
    !Array.isArray(state.requests) ||
    !state.requests.every((r) => typeof r?.id === "string" && typeof r.kind === "string")
  )
    return undefined
  return state as SealedRunState
}
