import type { EngineTreeRuntime } from "@toolnexus/core/engine"
import { expectTypeOf, it } from "vitest"
import type { Runtime } from "./runtime.js"
import type { Handle, TaskResult } from "./types.js"

it("the engine seam's structural runtime is what createRuntime returns (core cannot import it)", () => {
  expectTypeOf<Runtime>().toMatchTypeOf<EngineTreeRuntime<Handle, TaskResult>>()
})
