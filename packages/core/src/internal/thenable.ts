/** @internal True for a promise or any object with a callable `then` (what `await` would wait on). */
export function isThenable<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | null)?.then === "function"
}
