import { describeCli } from "./cli-suite.js"

// On the store servers: the same JavaScript driver code whichever Node runs it, so CI runs this
// file once (.ci/run), on the machine's Node.
describeCli({ backends: ["PostgreSQL", "Redis"] })
