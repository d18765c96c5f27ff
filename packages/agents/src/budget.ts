import type { Budget } from "./types.js"

/** What a handle's subtree has spent (rolled up from its descendants). */
export interface Spend {
  turns: number
  tokens: number
  toolCalls: number
}

/** @internal The budget-relevant part of a handle. */
export interface BudgetHolder {
  readonly budget: Budget
  readonly spend: Spend
  readonly spawnedAt: number
}

/** Spend-type limits: carved from the parent's remainder and checked before every turn. */
const SPEND_LIMITS = [
  ["maxTurns", (s: Spend) => s.turns],
  ["maxTokens", (s: Spend) => s.tokens],
  ["maxToolCalls", (s: Spend) => s.toolCalls],
] as const

/**
 * @internal A child's effective budget: its own limits, each capped by what the parent has
 * left. `maxDepth` counts levels below a handle, so the child gets one fewer.
 */
export function carveBudget(own: Budget, parent: BudgetHolder | undefined, now: number): Budget {
  const budget: Budget = { ...own }
  if (!parent) return budget
  const limits = parent.budget
  for (const [field, spent] of SPEND_LIMITS) {
    const cap = limits[field]
    if (cap !== undefined)
      budget[field] = Math.min(own[field] ?? Number.POSITIVE_INFINITY, Math.max(0, cap - spent(parent.spend)))
  }
  if (limits.maxWallMs !== undefined) {
    const left = Math.max(0, limits.maxWallMs - (now - parent.spawnedAt))
    budget.maxWallMs = Math.min(own.maxWallMs ?? Number.POSITIVE_INFINITY, left)
  }
  if (limits.maxDepth !== undefined)
    budget.maxDepth = Math.min(own.maxDepth ?? Number.POSITIVE_INFINITY, limits.maxDepth - 1)
  return budget
}

/**
 * @internal The first spend limit reached anywhere on the live chain (self first, then each
 * ancestor: their spend includes every sibling's, rolled up), or undefined.
 */
export function reachedLimit(chain: Iterable<BudgetHolder>, now: number): string | undefined {
  for (const holder of chain) {
    for (const [field, spent] of SPEND_LIMITS) {
      const cap = holder.budget[field]
      if (cap !== undefined && spent(holder.spend) >= cap) return field
    }
    const wall = holder.budget.maxWallMs
    if (wall !== undefined && now - holder.spawnedAt >= wall) return "maxWallMs"
  }
  return undefined
}
