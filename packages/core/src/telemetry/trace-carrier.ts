import type { SpanContext } from "@opentelemetry/api"
import type { Request } from "../types.js"
import type { OtelModule } from "./otel-api.js"

/**
 * The key of `Request.data` that carries the trace context of the run that suspended, so
 * that the run resuming it (in any process, from any store) links its spans to that trace.
 * Set only while a recording span exists; W3C Trace Context fields.
 */
export const TRACE_DATA_KEY = "trace"

/** The trace context stored on a pending request under `data.trace`. */
export interface TraceCarrier {
  /** W3C `traceparent`: `00-<trace id>-<span id>-<flags>`. */
  traceparent: string
  /** W3C `tracestate`, the span context's serialized vendor entries; absent when it has none. */
  tracestate?: string
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

/** @internal The carrier of a span context. */
export function carrierOf(ctx: SpanContext): TraceCarrier {
  const flags = (ctx.traceFlags & 0xff).toString(16).padStart(2, "0")
  const carrier: TraceCarrier = { traceparent: `00-${ctx.traceId}-${ctx.spanId}-${flags}` }
  const state = ctx.traceState?.serialize()
  if (state) carrier.tracestate = state
  return carrier
}

/** @internal The remote span context a request's `data.trace` names, if it is well-formed. */
export function linkedContext(api: OtelModule, request: Request | undefined): SpanContext | undefined {
  const carrier = request?.data?.[TRACE_DATA_KEY] as Partial<TraceCarrier> | undefined
  if (typeof carrier?.traceparent !== "string") return undefined
  const match = TRACEPARENT.exec(carrier.traceparent)
  if (!match) return undefined
  const ctx: SpanContext = {
    traceId: match[1] as string,
    spanId: match[2] as string,
    traceFlags: Number.parseInt(match[3] as string, 16),
    isRemote: true,
  }
  if (typeof carrier.tracestate === "string") ctx.traceState = api.createTraceState(carrier.tracestate)
  return api.trace.isSpanContextValid(ctx) ? ctx : undefined
}

/** @internal A copy of `request` carrying `carrier`, unless it already carries one (the leaf's wins). */
export function withTrace(request: Request, carrier: TraceCarrier): Request {
  if (request.data?.[TRACE_DATA_KEY] !== undefined) return request
  const stamped: Request = {
    id: request.id,
    kind: request.kind,
    prompt: request.prompt,
    data: { ...request.data, [TRACE_DATA_KEY]: carrier },
  }
  if (request.url !== undefined) stamped.url = request.url
  if (request.expiresAt !== undefined) stamped.expiresAt = request.expiresAt
  return stamped
}
