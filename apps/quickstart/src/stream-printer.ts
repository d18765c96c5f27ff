import type { StreamEvent } from "@toolnexus/core"

/**
 * Prints a run's progress as it happens: the agent's text as it streams, each tool call, and
 * the request it parks on. Returns the listener to pass as `onEvent`, and `end()` to close a
 * line the text left open.
 */
export function streamPrinter(step: string, write: (text: string) => void) {
  let open = false
  const close = () => {
    if (open) write("\n")
    open = false
  }
  return {
    onEvent(ev: StreamEvent): void {
      if (ev.type === "text") {
        if (!open) write(`[${step}] agent: `)
        open = true
        write(ev.delta)
      } else if (ev.type === "tool_call") {
        close()
        write(`[${step}] → ${ev.name} ${JSON.stringify(ev.args)}\n`)
      } else if (ev.type === "tool_result") {
        close()
        write(`[${step}] ← ${ev.name}${ev.isError ? " (error)" : ""}: ${ev.output}\n`)
      } else if (ev.type === "turn") close()
    },
    end: close,
  }
}
