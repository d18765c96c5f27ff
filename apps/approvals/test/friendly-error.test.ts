import { ConfigError, LLMHttpError, NetworkError, StoreError } from "@toolnexus/core"
import { expect, it } from "vitest"
import { friendlyError } from "../src/friendly-error.js"

it.each([
  [
    new NetworkError("could not reach the LLM endpoint: connect ECONNREFUSED 127.0.0.1:11434"),
    "cannot reach the model at http://127.0.0.1:11434/v1: is the server running? (could not reach the LLM endpoint: connect ECONNREFUSED 127.0.0.1:11434)",
  ],
  [
    new LLMHttpError(401, '{"error":"bad key"}'),
    "the API key was refused (401): check OPENAI_API_KEY or ANTHROPIC_API_KEY",
  ],
  [
    new LLMHttpError(404, "no such model"),
    "the model endpoint at http://127.0.0.1:11434/v1 answered 404: check the base URL and the model name",
  ],
  [
    new LLMHttpError(429, "slow down"),
    "the model endpoint at http://127.0.0.1:11434/v1 is rate limiting (429): try again in a moment",
  ],
  [
    new StoreError("connect ECONNREFUSED 127.0.0.1:5432\n    at …"),
    "the database failed: connect ECONNREFUSED 127.0.0.1:5432",
  ],
  [new ConfigError("model must be a non-empty string"), "configuration: model must be a non-empty string"],
  [
    Object.assign(new Error("listen EADDRINUSE"), { code: "EADDRINUSE", port: 3000 }),
    "port 3000 is already in use: set PORT (or --port) to a free one, or 0 for any",
  ],
  [new Error("first line\nsecond line"), "first line"],
])("%s ⇒ one line with the fix", (error, line) => {
  expect(friendlyError(error, "http://127.0.0.1:11434/v1")).toBe(line)
})
