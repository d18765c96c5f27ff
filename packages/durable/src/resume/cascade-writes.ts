import type { ConversationStore, Message, Request, SaveMeta } from "@toolnexus/core"
import type { CommitSave, DurableStore } from "../durable-store.js"

/**
 * @internal A restored runtime's store: the durable store, except while a claimed cascade
 * runs. Then each handle's final save is held (reads see it) and handed over by {@link take}
 * for the one `commitResume` that writes them with the snapshot and consumes the claim; the
 * claim token stays the explicit save option the cascade's last step passed. Checkpoints of a
 * conversation the cascade has not saved yet are written at once: they keep a crashed
 * attempt's tool results, and change neither what a conversation waits on nor the claim.
 */
export class CascadeWrites implements ConversationStore {
  readonly checkpoints = true
  readonly #store: DurableStore
  #held: Map<string, CommitSave> | undefined

  constructor(store: DurableStore) {
    this.#store = store
  }

  /** Holds final saves from now until {@link take} or {@link drop}. */
  hold(): void {
    this.#held = new Map()
  }

  /** The saves held since {@link hold}, in the order they were first made; writes go through again. */
  take(): CommitSave[] {
    const saves = [...(this.#held?.values() ?? [])]
    this.#held = undefined
    return saves
  }

  /** Forgets the held saves (a failed cascade writes nothing); writes go through again. */
  drop(): void {
    this.#held = undefined
  }

  async get(id: string): Promise<Message[] | undefined> {
    const held = this.#held?.get(id)
    return held ? held.messages.slice() : this.#store.get(id)
  }

  async getPending(id: string): Promise<Request | undefined> {
    const pending = this.#held?.get(id)?.meta?.pending
    return pending === undefined ? this.#store.getPending(id) : (pending ?? undefined)
  }

  async save(id: string, messages: Message[], meta?: SaveMeta): Promise<void> {
    const held = this.#held
    if (held === undefined) return this.#store.save(id, messages, meta)
    const before = held.get(id)
    if (meta?.checkpoint) {
      // Once the cascade saved this conversation, its later checkpoints join that save.
      if (before === undefined) return this.#store.save(id, messages, meta)
      before.messages = messages.slice()
      return
    }
    const pending = meta?.pending === undefined ? before?.meta?.pending : meta.pending
    const claim = meta?.claim ?? before?.meta?.claim
    held.set(id, {
      id,
      messages: messages.slice(),
      meta: {
        ...(pending === undefined ? {} : { pending }),
        ...(claim === undefined ? {} : { claim }),
      },
    })
  }
}
