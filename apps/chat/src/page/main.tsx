import { useChat } from "@ai-sdk/react"
import {
  DefaultChatTransport,
  type UIMessage,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
} from "ai"
import { type FormEvent, useEffect, useState } from "react"
import { createRoot } from "react-dom/client"

/** The toolnexus Request a `data-toolnexus-request` part carries. */
interface PendingRequest {
  id: string
  kind: string
  prompt: string
}

/** A tool part as the page reads it (`tool-<name>`). */
interface ToolPart {
  type: string
  toolCallId: string
  state: string
  input?: Record<string, unknown>
  output?: unknown
  approval?: { id: string }
}

// One chat per tab, named in the URL (`#chat-…`): a reload opens the same chat, whose transcript
// the server keeps.
const chatId = /^#(chat-[\w-]+)$/.exec(location.hash)?.[1] ?? `chat-${crypto.randomUUID()}`
if (location.hash !== `#${chatId}`) history.replaceState(null, "", `#${chatId}`)

/** The chat's stored messages (`loadChat` on the server), a waiting card included; then the chat. */
function Loader() {
  const [loaded, setLoaded] = useState<UIMessage[] | Error | undefined>(undefined)
  useEffect(() => {
    fetch(`/api/chat/${encodeURIComponent(chatId)}/messages`)
      .then(async (res) => {
        if (!res.ok) throw new Error(`loading the chat failed: ${res.status} ${await res.text()}`)
        return (await res.json()) as UIMessage[]
      })
      .then(setLoaded, (error: Error) => setLoaded(error))
  }, [])
  if (loaded === undefined) return <p>Loading the chat…</p>
  if (loaded instanceof Error) return <p role="alert">{loaded.message}</p>
  return <App initial={loaded} />
}

function App({ initial }: { initial: UIMessage[] }) {
  const [draft, setDraft] = useState("")
  const [answered, setAnswered] = useState<string[]>([])
  const { messages, sendMessage, addToolApprovalResponse, addToolOutput, status, error } = useChat({
    id: chatId,
    messages: initial,
    transport: new DefaultChatTransport({ api: "/api/chat" }),
    // Approvals and browser-side tool results go back to the server by themselves.
    sendAutomaticallyWhen: ({ messages }) =>
      lastAssistantMessageIsCompleteWithApprovalResponses({ messages }) ||
      lastAssistantMessageIsCompleteWithToolCalls({ messages }),
    // The relay tool runs here, in the browser.
    onToolCall: ({ toolCall }) => {
      if (toolCall.toolName !== "browser_time") return
      const zone = Intl.DateTimeFormat().resolvedOptions().timeZone
      void addToolOutput({
        tool: "browser_time" as never,
        toolCallId: toolCall.toolCallId,
        output: `It is ${new Date().toLocaleTimeString("en-GB")} in ${zone}.`,
      })
    },
  })

  const send = (event: FormEvent) => {
    event.preventDefault()
    if (draft.trim() === "") return
    void sendMessage({ text: draft })
    setDraft("")
  }
  const answer = (request: PendingRequest, data: Record<string, unknown>) => {
    setAnswered((ids) => [...ids, request.id])
    void sendMessage(undefined, { body: { answer: { id: request.id, ok: true, data } } })
  }

  return (
    <div>
      {messages.map((message) => (
        <Message
          key={message.id}
          message={message}
          answered={answered}
          onApprove={(id, approved) => void addToolApprovalResponse({ id, approved })}
          onAnswer={answer}
        />
      ))}
      {error ? <p role="alert">{shownError(error)}</p> : null}
      <form className="send" onSubmit={send}>
        <input
          aria-label="Message"
          value={draft}
          onChange={(e) => setDraft(e.target.value)}
          placeholder="Refund order 42 · What time is it? · Send me the receipt"
        />
        <button type="submit" disabled={status === "streaming" || status === "submitted"}>
          Send
        </button>
      </form>
    </div>
  )
}

/**
 * The transport's error carries the handler's JSON reply as its message; the handler's own
 * `error.message` is written for the person chatting (a chat waiting on an answer says so).
 */
function shownError(error: Error): string {
  try {
    const reply = JSON.parse(error.message) as { error?: { message?: unknown } }
    if (typeof reply.error?.message === "string") return reply.error.message
  } catch {
    // not the handler's JSON: a network failure, say
  }
  return `Something went wrong: ${error.message}`
}

function Message(props: {
  message: UIMessage
  answered: string[]
  onApprove: (approvalId: string, approved: boolean) => void
  onAnswer: (request: PendingRequest, data: Record<string, unknown>) => void
}) {
  const { message } = props
  return (
    <div className={`msg ${message.role}`} data-role={message.role}>
      {message.parts.map((part, i) => {
        const key = `${message.id}-${i}`
        if (part.type === "text") return <p key={key}>{part.text}</p>
        if (part.type === "data-toolnexus-request") {
          const request = part.data as PendingRequest
          if (props.answered.includes(request.id)) return null
          return <QuestionCard key={key} request={request} onAnswer={props.onAnswer} />
        }
        if (part.type.startsWith("tool-"))
          return <ToolCard key={key} part={part as unknown as ToolPart} onApprove={props.onApprove} />
        return null
      })}
    </div>
  )
}

function ToolCard({
  part,
  onApprove,
}: {
  part: ToolPart
  onApprove: (id: string, approved: boolean) => void
}) {
  const name = part.type.slice("tool-".length)
  if (part.state === "approval-requested" && part.approval) {
    const { id } = part.approval
    return (
      <div className="card" data-testid="approval">
        <p>
          Approve <b>{name}</b> {JSON.stringify(part.input)}?
        </p>
        <button type="button" onClick={() => onApprove(id, true)}>
          Approve
        </button>
        <button type="button" onClick={() => onApprove(id, false)}>
          Decline
        </button>
      </div>
    )
  }
  const status =
    part.state === "output-available"
      ? "done"
      : part.state === "output-denied"
        ? "declined"
        : part.state === "output-error"
          ? "failed"
          : "…"
  return (
    <div className="card" data-testid={`tool-${name}`} data-state={part.state}>
      {name}: {status}
    </div>
  )
}

function QuestionCard(props: {
  request: PendingRequest
  onAnswer: (r: PendingRequest, data: Record<string, unknown>) => void
}) {
  const [value, setValue] = useState("")
  return (
    <form
      className="card"
      data-testid="question"
      onSubmit={(e) => {
        e.preventDefault()
        props.onAnswer(props.request, { email: value })
      }}
    >
      <label>
        {props.request.prompt}{" "}
        <input aria-label="Answer" value={value} onChange={(e) => setValue(e.target.value)} />
      </label>
      <button type="submit">Answer</button>
    </form>
  )
}

const root = document.getElementById("root")
if (root) createRoot(root).render(<Loader />)
