import type * as OtelApi from "@opentelemetry/api"

/** @internal The `@opentelemetry/api` module, as loaded at run time. */
export type OtelModule = typeof OtelApi

/**
 * An OpenTelemetry tracer: any `Tracer` from `@opentelemetry/api` 1.x fits. Declared here
 * structurally so that toolnexus' types never need the OpenTelemetry package installed.
 */
export interface TracerLike {
  /** `Tracer.startSpan`: starts span `name` with its options under `context`, an OpenTelemetry `Context`. */
  startSpan(name: string, options?: object, context?: unknown): unknown
}

/** Tracing settings of a client or a runtime. */
export interface TelemetryOptions {
  /** `false` turns tracing off even when a global tracer provider is registered. */
  enabled?: boolean
  /** The tracer to use; default the globally registered provider's, when there is one. */
  tracer?: TracerLike
  /**
   * Record prompts, model output, tool arguments and tool results on spans. Off by default:
   * spans then carry only names, ids, models, finish reasons and token counts.
   */
  captureContent?: boolean
  /** The agent the run spans name (`invoke_agent <agentName>`); the agents runtime sets it per handle. */
  agentName?: string
  /** The agent instance id (`gen_ai.agent.id`); the agents runtime sets the handle id. */
  agentId?: string
  /**
   * The parent of every run span: an OpenTelemetry `Context` (as `ToolContext.traceContext`
   * carries it to a tool). Default: the active context.
   */
  parentContext?: unknown
}

// The key under which @opentelemetry/api 1.x keeps its registered globals (trace, context, …).
const GLOBAL_KEY = Symbol.for("opentelemetry.js.api.1")

let importer: () => Promise<OtelModule> = () => import("@opentelemetry/api")
let loading: Promise<OtelModule | undefined> | undefined
let loaded: OtelModule | undefined

/**
 * @internal Whether some code registered a global tracer provider. Read from the API's own
 * global slot, so that answering "no" imports nothing and costs one property read.
 */
export function globalTracerRegistered(): boolean {
  const globals = (globalThis as Record<symbol, { trace?: unknown } | undefined>)[GLOBAL_KEY]
  return globals?.trace !== undefined
}

/** @internal The API module once loaded, else undefined (not loaded yet, or not installed). */
export function otelLoaded(): OtelModule | undefined {
  return loaded
}

/**
 * @internal Loads `@opentelemetry/api` once. Resolves `undefined` when it is not installed:
 * tracing is then off and nothing else changes.
 */
export function loadOtel(): Promise<OtelModule | undefined> {
  loading ??= importer().then(
    (mod) => {
      loaded = mod
      return mod
    },
    () => undefined,
  )
  return loading
}

/** @internal Test seam: replaces how the API is imported (e.g. to simulate it missing). */
export function setOtelImporter(next: (() => Promise<OtelModule>) | undefined): void {
  importer = next ?? (() => import("@opentelemetry/api"))
  loading = undefined
  loaded = undefined
}
