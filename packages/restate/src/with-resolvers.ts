/**
 * @internal Restate's SDK calls `Promise.withResolvers` (Node ≥ 22); on Node 20 a stand-in is
 * installed before the SDK is loaded. It changes nothing where the method exists.
 */
export function installWithResolvers(): void {
  const P = Promise as unknown as { withResolvers?: unknown }
  if (typeof P.withResolvers === "function") return
  Object.defineProperty(Promise, "withResolvers", {
    configurable: true,
    writable: true,
    value: function withResolvers<T>() {
      let resolve!: (value: T | PromiseLike<T>) => void
      let reject!: (reason?: unknown) => void
      const promise = new Promise<T>((res, rej) => {
        resolve = res
        reject = rej
      })
      return { promise, resolve, reject }
    },
  })
}
