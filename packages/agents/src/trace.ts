/**
 * @internal The runtime trace behind `rt.trace()`. A transition is kept as its handle's id and
 * its shared step text, and its line `<id>: <from>→<to>` is built on read: every parked handle
 * leaves at least two, and each built line held about 60 B more than the two references.
 */
export class Trace {
  /** Pairs: a note's line and `undefined`, or a transition's handle id and step text. */
  readonly #items: (string | undefined)[] = []

  /** Adds a line as it is. */
  note(line: string): void {
    this.#items.push(line, undefined)
  }

  /** Adds the line `<id>: <step>`; both strings are kept, not the line. */
  step(id: string, step: string): void {
    this.#items.push(id, step)
  }

  /** Every line, in order. */
  lines(): string[] {
    const items = this.#items
    const out: string[] = []
    for (let i = 0; i < items.length; i += 2) {
      const head = items[i] as string
      const step = items[i + 1]
      out.push(step === undefined ? head : `${head}: ${step}`)
    }
    return out
  }
}
