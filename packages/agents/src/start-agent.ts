import { ConfigError } from "@toolnexus/core"
import type { Agent } from "./agent.js"
import { systemClock } from "./clock.js"
import { TIMER_CHANNEL } from "./inbox.js"
import { HEARTBEAT_OK, HEARTBEAT_PROMPT } from "./persona.js"
import { type Runtime, createRuntime } from "./runtime.js"
import type { Handle, RuntimeOptions } from "./types.js"

/** Heartbeat settings of {@link startAgent}. */
export interface HeartbeatOptions {
  /** Between beats, on the runtime's clock. */
  everyMs: number
  /** Called with each reply that does not contain `HEARTBEAT_OK`. */
  onBeat?: (text: string) => void
}

/** A persona running on its own heartbeat. */
export interface StartedAgent {
  /** The runtime made for the persona; its registry holds only the persona's def. */
  runtime: Runtime
  /** The persona's handle, the root's only child (e.g. `root/ava.1`). */
  handle: Handle
  /** The replies that spoke (not `HEARTBEAT_OK`), in order. */
  beats: string[]
  /** Stops the heartbeat and closes the runtime. */
  stop(): Promise<void>
}

/**
 * Starts an agent on a runtime of its own with a heartbeat: every `everyMs` on the runtime's
 * clock it posts a `timer` tick (ticks coalesce, so a slow beat never piles up) and wakes the
 * handle when it is idle with {@link HEARTBEAT_PROMPT}. A reply containing `HEARTBEAT_OK` is
 * silent; any other reaches `onBeat` and `beats`. The host posts and wakes the handle for its own
 * channels.
 *
 * @throws ConfigError when `everyMs` is not a positive number.
 * @example
 * const started = startAgent(fromDir("./ava"), { llm }, { everyMs: 30 * 60_000, onBeat: console.log })
 */
export function startAgent(
  persona: Agent,
  opts: Omit<RuntimeOptions, "registry">,
  heartbeat: HeartbeatOptions,
): StartedAgent {
  const everyMs = heartbeat?.everyMs
  if (typeof everyMs !== "number" || !Number.isFinite(everyMs) || everyMs <= 0) {
    throw new ConfigError(`startAgent: everyMs must be a positive number, got ${JSON.stringify(everyMs)}`)
  }
  const clock = opts.clock ?? systemClock
  const runtime = createRuntime({ ...opts, clock, registry: { [persona.def.name]: persona.def } })
  const handle = runtime.spawn(runtime.root, persona.def.name)
  const beats: string[] = []
  let stopped = false
  let timer: unknown
  const beat = () => {
    if (stopped) return
    try {
      runtime.post(handle, { text: "tick", from: "clock", channel: TIMER_CHANNEL })
    } catch {
      // A full inbox already holds a tick: this one coalesces away.
    }
    if (runtime.stateOf(handle) === "idle") {
      runtime.wake(handle, HEARTBEAT_PROMPT)
      void runtime.wait(handle).then((result) => {
        if (result.isError || result.text.includes(HEARTBEAT_OK)) return
        beats.push(result.text)
        heartbeat.onBeat?.(result.text)
      })
    }
    timer = clock.setTimeout(beat, everyMs)
  }
  timer = clock.setTimeout(beat, everyMs)
  return {
    runtime,
    handle,
    beats,
    async stop() {
      stopped = true
      clock.clearTimeout(timer)
      await runtime.close(runtime.root)
    },
  }
}
