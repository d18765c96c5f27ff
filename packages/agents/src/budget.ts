import type { Budget } from "./types.js"

/**
 * What a handle has spent: its own LLM turns, and the turns, tokens and tool calls of its
 * whole subtree (its own plus every descendant's, rolled up).
 */
export interface Spend {
  /** The handle's own LLM turns; `budget.maxTurns` limits these. */
  turns: number
  /** LLM turns of the handle and all its descendants. */
  totalTurns: number
  /** Tokens of the handle and all its descendants: a pool shared down the chain. */
  tokens: number
  /** Tool calls of the handle and all its descendants: a pool shared down the chain. */
  toolCalls: number
}

/** @internal The budget-relevant part of a handle. */
export interface BudgetHolder {
  readonly budget: Budget
  readonly spend: Spend
  readonly spawnedAt: number
}

/** @internal Whether a wall-time budget bounds any handle of the chain. */
export function wallBounded(chain: Iterable<BudgetHolder>): boolean {
  for (const holder of chain) if (holder.budget.maxWallMs !== undefined) return true
  return false
}

/**
 * Pools shared down the chain: carved from the parent's remainder at spawn and checked on
 * every live ancestor before each turn, so sibling spend counts.
 */
const POOLS = [
  ["maxTokens", (s: Spend) => s.tokens],
  ["maxToolCalls", (s: Spend) => s.toolCalls],
  ["maxTotalTurns", (s: Spend) => s.totalTurns],
] as const

/** The budget without limits, shared by every handle that has none (so frozen). */
const NO_LIMITS: Budget = Object.freeze({})

/**
 * @internal A child's effective budget: its own limits, each pool (tokens, tool calls, the
 * subtree's turns) capped by what the parent has left. `maxTurns` counts the handle's own
 * turns only, so it is no pool and the parent's never caps it (DESIGN §8): a subtree cap is
 * `maxTotalTurns`. `maxDepth` counts levels below a handle, so the child gets one fewer.
 */
export function carveBudget(own: Budget, parent: BudgetHolder | undefined, now: number): Budget {
  // Copied, not spread: fields are added below, and a spread-then-add object gets a hidden
  // class of its own on Node 20.
  const budget: Budget = Object.assign({}, own)
  if (!parent) return limited(budget)
  const limits = parent.budget
  for (const [field, spent] of POOLS) {
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
  return limited(budget)
}

/** `budget`, or the shared {@link NO_LIMITS} when it sets nothing (56 B less per handle). */
function limited(budget: Budget): Budget {
  for (const _ in budget) return budget
  return NO_LIMITS
}

/**
 * @internal The first pool (or wall time) used up anywhere on the live chain, self first,
 * then each ancestor (their spend includes every sibling's, rolled up); or undefined. A spawn
 * under a handle is refused when this names a limit. With `now` undefined the wall is not
 * checked (under an executor a spawn is replayed, and only a journaled step may read the clock).
 */
export function poolLimit(chain: Iterable<BudgetHolder>, now: number | undefined): string | undefined {
  for (const holder of chain) {
    for (const [field, spent] of POOLS) {
      const cap = holder.budget[field]
      if (cap !== undefined && spent(holder.spend) >= cap) return field
    }
    const wall = holder.budget.maxWallMs
    if (wall !== undefined && now !== undefined && now - holder.spawnedAt >= wall) return "maxWallMs"
  }
  return undefined
}

/**
 * @internal The limit that stops a handle's next turn, or undefined: its own `maxTurns`,
 * then {@link poolLimit} of its chain.
 */
export function turnLimit(
  self: BudgetHolder,
  chain: Iterable<BudgetHolder>,
  now: number,
): string | undefined {
  const maxTurns = self.budget.maxTurns
  if (maxTurns !== undefined && self.spend.turns >= maxTurns) return "maxTurns"
  return poolLimit(chain, now)
}
