/** The lifecycle state of a handle. */
export type HandleState = "idle" | "running" | "suspended" | "closed"
