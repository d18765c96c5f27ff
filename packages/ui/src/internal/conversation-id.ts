/**
 * @internal The one rule for the conversation id a chat maps to (the chat id itself, or what the
 * handler's `conversationId` option returns): a string of 1 to 200 characters. The handlers
 * refuse another with 400; `loadChat` with `ConfigError`.
 */
export function isConversationId(id: unknown): id is string {
  return typeof id === "string" && id.length >= 1 && id.length <= 200
}
