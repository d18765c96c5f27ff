/**
 * @internal The text and reasoning parts a writer has open, for both wire formats: one of each
 * at most, closed in the order the formats require (text before reasoning). `close` writes the
 * format's end events of a part.
 */
export class OpenParts {
  text: string | undefined
  reasoning: string | undefined
  readonly #close: (kind: "text" | "reasoning", id: string) => void

  constructor(close: (kind: "text" | "reasoning", id: string) => void) {
    this.#close = close
  }

  closeText(): void {
    const id = this.text
    if (id === undefined) return
    this.text = undefined
    this.#close("text", id)
  }

  closeReasoning(): void {
    const id = this.reasoning
    if (id === undefined) return
    this.reasoning = undefined
    this.#close("reasoning", id)
  }

  closeAll(): void {
    this.closeText()
    this.closeReasoning()
  }
}
