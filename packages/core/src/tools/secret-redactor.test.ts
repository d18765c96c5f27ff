import { describe, expect, it } from "vitest"
import { createSecretRedactor, headerSecretValues } from "./secret-redactor.js"

describe("createSecretRedactor", () => {
  it("replaces each secret, whole and JSON-escaped, longest first; short values are left alone", () => {
    const redact = createSecretRedactor(["sk-12345", "sk-12345-long", 'q"uote1', "abc"])
    expect(redact("a sk-12345-long b sk-12345 c abc")).toBe("a [redacted] b [redacted] c abc")
    expect(redact(JSON.stringify({ echoed: 'q"uote1' }))).toBe('{"echoed":"[redacted]"}')
  })

  it("takes its own marker and shortest length; no secrets ⇒ the text as it is", () => {
    expect(createSecretRedactor(["xyz"], { marker: "***", minLength: 3 })("a xyz")).toBe("a ***")
    expect(createSecretRedactor([])("unchanged")).toBe("unchanged")
  })
})

describe("headerSecretValues", () => {
  it("covers the value, its credential without the scheme, and cookie pairs", () => {
    const secrets = headerSecretValues({
      authorization: "Bearer tok-9876",
      cookie: "sid=s3ss10n; theme=dark",
    })
    const redact = createSecretRedactor(secrets)
    expect(redact("got tok-9876 and s3ss10n")).toBe("got [redacted] and [redacted]")
    expect(redact("Authorization: Bearer tok-9876")).toBe("Authorization: [redacted]")
  })
})
