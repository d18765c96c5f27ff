import {
  ConfigError,
  type HostRelayOptions,
  type HostRelayTool,
  type Toolkit,
  createToolkit,
  relayTool,
} from "@toolnexus/core"

/** @internal The toolkit of one run with the caller's relay tools, and how to let it go. */
export interface RunToolkit {
  /** The agent's toolkit, or a new one holding its tools and the caller's relay tools. */
  toolkit: Toolkit | undefined
  /** Closes the new toolkit (its tools are the agent's and relay tools: nothing else closes). */
  release(): Promise<void>
}

/**
 * @internal The one way a host offers a caller's tools (`HostRelayOptions.tools`) to a run:
 * the agent's toolkit plus a relay tool for each, a toolkit tool of the same name winning.
 *
 * @throws ConfigError naming `tools` for an invalid tool (its name, or a duplicate).
 */
export async function runToolkit(
  base: Toolkit | undefined,
  relay: HostRelayOptions | undefined,
): Promise<RunToolkit> {
  const tools = relay?.tools ?? []
  if (tools.length === 0) return { toolkit: base, release: async () => {} }
  const own = base?.tools() ?? []
  const names = new Set(own.map((t) => t.name))
  let toolkit: Toolkit
  try {
    const relays = tools
      .filter((t) => !names.has(t.name))
      .map((t: HostRelayTool) => relayTool(t.name, t.description ?? "", t.parameters))
    toolkit = await createToolkit({ extraTools: [...own, ...relays] })
  } catch (error) {
    if (ConfigError.isInstance(error))
      throw new ConfigError(`relay tools: ${error.message}`, { cause: error })
    throw error
  }
  return { toolkit, release: () => toolkit.close() }
}
