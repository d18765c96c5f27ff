/** @internal The history of a handle that has not moved yet. */
export const NO_STEPS: readonly string[] = Object.freeze([])
