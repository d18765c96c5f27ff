import type { Hooks } from "@toolnexus/core"

/**
 * @internal A handle's hooks: the user's, each called with `handle` (the handle id) added to
 * its argument, so one set of hooks on a runtime can tell its handles apart.
 */
export function hooksWithHandle(hooks: Hooks, handle: string): Hooks {
  const tagged: Hooks = {}
  const { beforeLLM, afterLLM, beforeTool, afterTool } = hooks
  if (beforeLLM) tagged.beforeLLM = (info) => beforeLLM.call(hooks, { ...info, handle })
  if (afterLLM) tagged.afterLLM = (info) => afterLLM.call(hooks, { ...info, handle })
  if (beforeTool) tagged.beforeTool = (info) => beforeTool.call(hooks, { ...info, handle })
  if (afterTool) tagged.afterTool = (info) => afterTool.call(hooks, { ...info, handle })
  return tagged
}
