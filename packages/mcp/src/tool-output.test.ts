import { expect, it } from "vitest"
import { toolResultOf } from "./tool-output.js"

it("joins text blocks and summarises the rest without payloads", () => {
  const result = toolResultOf(
    {
      content: [
        { type: "text", text: "one" },
        { type: "image", data: "AAAA", mimeType: "image/png" },
        { type: "text", text: "two" },
        { type: "resource_link", uri: "file:///a.txt", name: "a.txt", mimeType: "text/plain" },
        { type: "resource", resource: { uri: "file:///b.txt", text: "hello", mimeType: "text/plain" } },
        { type: "audio", data: "AAAAAAAA", mimeType: "audio/wav" },
      ],
    },
    "s",
    1_000,
  )
  expect(result).toEqual({
    output: "one\ntwo",
    isError: false,
    metadata: {
      server: "s",
      content: [
        { type: "image", mimeType: "image/png", bytes: 3 },
        { type: "resource_link", uri: "file:///a.txt", name: "a.txt", mimeType: "text/plain" },
        { type: "resource", uri: "file:///b.txt", mimeType: "text/plain", chars: 5 },
        { type: "audio", mimeType: "audio/wav", bytes: 6 },
      ],
    },
  })
})

it("keeps the server's isError and describes non-text content when there is no text", () => {
  const result = toolResultOf(
    { content: [{ type: "image", data: "AAAA", mimeType: "image/png" }], isError: true },
    "s",
    100,
  )
  expect(result).toMatchObject({ output: "[image: image/png, 3 bytes]", isError: true })
})

it("uses structuredContent when there is no text, and keeps it in metadata", () => {
  const result = toolResultOf({ content: [], structuredContent: { temp: 21 } }, "s", 100)
  expect(result).toEqual({
    output: '{"temp":21}',
    isError: false,
    metadata: { server: "s", structuredContent: { temp: 21 } },
  })
})

it("gives an empty output for an empty result", () => {
  expect(toolResultOf({}, "s", 100)).toEqual({ output: "", isError: false, metadata: { server: "s" } })
})
