import type { DurableStore } from "@toolnexus/durable"
import { ProxyError, badRequest } from "./proxy-error.js"

/*
 * The Responses API items this proxy returned, kept so that a follow-up may send
 * `{"type": "item_reference", "id": …}` instead of the item (the AI SDK's OpenAI provider does
 * so whenever `store` is not false), and each response's whole item list, so that a follow-up
 * may name it as `previous_response_id`. They live in the store's snapshot table:
 *   relay-proxy/item/<id>          → { item, caller? }
 *   relay-proxy/response/<id>      → { items, caller? }
 * Any proxy process on the store resolves them, and only for the caller (key) they were returned to.
 */

const itemKey = (id: string) => `relay-proxy/item/${id}`
const responseKey = (id: string) => `relay-proxy/response/${id}`

/** A Responses API item; `id` is set on every item the proxy returns. */
export type ResponseItem = Record<string, unknown> & { type: string; id?: string }

interface StoredItem {
  item: ResponseItem
  caller?: string
}

interface StoredResponse {
  items: ResponseItem[]
  caller?: string
  /** The response object as returned, for `GET /v1/responses/{id}`; absent in older rows. */
  response?: Record<string, unknown>
}

/**
 * Keeps a response: its output items for later `item_reference`s, and the conversation up to
 * and including them (`items`: the resolved input, then the output) for `previous_response_id`.
 */
export async function rememberResponse(
  store: DurableStore,
  response: { id: string; output: ResponseItem[] } & Record<string, unknown>,
  items: ResponseItem[],
  caller: string | undefined,
): Promise<void> {
  const owner = caller === undefined ? {} : { caller }
  for (const item of response.output) {
    if (item.id !== undefined)
      await store.putSnapshot(itemKey(item.id), { item, ...owner } satisfies StoredItem)
  }
  await store.putSnapshot(responseKey(response.id), { items, response, ...owner } satisfies StoredResponse)
}

/**
 * A stored response as it was returned (`GET /v1/responses/{id}`, `responses.retrieve`).
 *
 * @throws ProxyError 404 when this caller got no stored response with that id (another
 *   caller's is reported exactly like an unknown one)
 */
export async function storedResponse(
  store: DurableStore,
  id: string,
  caller: string | undefined,
): Promise<Record<string, unknown>> {
  const stored = (await store.getSnapshot(responseKey(id))) as StoredResponse | undefined
  if (stored?.response === undefined || stored.caller !== caller) throw notStored(id)
  return stored.response
}

/**
 * Deletes a stored response (`DELETE /v1/responses/{id}`, `responses.delete`) and its output
 * items: afterwards neither `previous_response_id` nor an `item_reference` reaches them.
 * Responses stored later keep their own copy of the conversation, so they still resolve.
 *
 * @throws ProxyError 404 as {@link storedResponse} does: nothing of another caller's is touched
 */
export async function forgetResponse(
  store: DurableStore,
  id: string,
  caller: string | undefined,
): Promise<void> {
  const stored = (await store.getSnapshot(responseKey(id))) as StoredResponse | undefined
  if (!Array.isArray(stored?.items) || stored.caller !== caller) throw notStored(id)
  const output = stored.response?.output
  if (Array.isArray(output)) {
    for (const item of output as ResponseItem[])
      if (typeof item.id === "string") await store.deleteSnapshot(itemKey(item.id))
  }
  // The response row goes last: a delete cut short is retried by its caller and finds it still.
  await store.deleteSnapshot(responseKey(id))
}

/** The 404 for a response id this caller has no stored response under. */
function notStored(id: string): ProxyError {
  return new ProxyError(404, "invalid_request_error", `no stored response with id ${JSON.stringify(id)}`, {
    code: "not_found",
    param: "response_id",
  })
}

/**
 * The items of a stored response's conversation (its input, then its output).
 *
 * @throws ProxyError 400 when no response with that id was returned to this caller
 */
export async function previousItems(
  store: DurableStore,
  id: string,
  caller: string | undefined,
): Promise<ResponseItem[]> {
  const stored = (await store.getSnapshot(responseKey(id))) as StoredResponse | undefined
  if (!Array.isArray(stored?.items) || stored.caller !== caller) {
    throw badRequest(
      `previous_response_id ${JSON.stringify(id)} names no response this proxy stored; send the whole input`,
      "previous_response_id",
    )
  }
  return stored.items
}

/**
 * Replaces each `item_reference` in `input` with the item it names.
 *
 * @throws ProxyError 400 naming the reference when no item with that id was returned to this
 *   caller (another caller's item is reported exactly like an unknown one)
 */
export async function resolveReferences(
  store: DurableStore,
  input: ResponseItem[],
  caller: string | undefined,
): Promise<ResponseItem[]> {
  return Promise.all(
    input.map(async (item, i) => {
      if (item.type !== "item_reference") return item
      const at = `input[${i}].id`
      if (typeof item.id !== "string" || item.id === "")
        throw badRequest(`${at} must be a non-empty string`, at)
      const stored = (await store.getSnapshot(itemKey(item.id))) as StoredItem | undefined
      if (stored?.item === undefined || stored.caller !== caller) {
        throw badRequest(
          `item_reference ${JSON.stringify(item.id)} names no item this proxy returned; send the item itself`,
          at,
        )
      }
      return stored.item
    }),
  )
}
