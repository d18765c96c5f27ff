import { describeCli } from "./cli-suite.js"

// On SQLite, whose driver is the one native part: on every Node CI uses.
describeCli({ backends: ["SQLite"], usage: true })
