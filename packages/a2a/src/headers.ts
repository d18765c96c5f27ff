const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g

/**
 * @internal The headers of one call: `${ENV}` references read from the environment now (as
 * `httpTool` does, so a rotated secret is picked up without rebuilding the tool), plus the
 * bearer token. An unset variable expands to the empty string; values are never logged.
 */
export function callHeaders(
  headers: Record<string, string> | undefined,
  bearerToken: string | undefined,
): Record<string, string> {
  const out: Record<string, string> = {}
  if (headers)
    for (const [name, value] of Object.entries(headers))
      out[name] = value.replace(ENV_REF, (_, env: string) => process.env[env] ?? "")
  if (bearerToken !== undefined) out.Authorization = `Bearer ${bearerToken}`
  return out
}
