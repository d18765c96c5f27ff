import type { DurableStore } from "@toolnexus/durable"
import { badRequest } from "./proxy-error.js"

/*
 * The Responses API items this proxy returned, kept so that a follow-up may send
 * `{"type": "item_reference", "id": …}` instead of the item (the AI SDK's OpenAI provider does
 * so whenever `store` is not false). Items live in the store's snapshot table as
 * `relay-proxy/item/<id>` → { item, caller? }: any proxy process on the store resolves them, and
 * only for the caller (key) they were returned to.
 */

const itemKey = (id: string) => `relay-proxy/item/${id}`

/** A Responses API item; `id` is set on every item the proxy returns. */
export type ResponseItem = Record<string, unknown> & { type: string; id?: string }

interface StoredItem {
  item: ResponseItem
  caller?: string
}

/** Keeps the output items of a response for later `item_reference`s. */
export async function rememberItems(
  store: DurableStore,
  items: ResponseItem[],
  caller: string | undefined,
): Promise<void> {
  for (const item of items) {
    if (item.id === undefined) continue
    const entry: StoredItem = caller === undefined ? { item } : { item, caller }
    await store.putSnapshot(itemKey(item.id), entry)
  }
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
