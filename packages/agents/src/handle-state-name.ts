/** The lifecycle state of a handle (its home is core, beside the host that reports it). */
export type { HandleState } from "@toolnexus/core"
