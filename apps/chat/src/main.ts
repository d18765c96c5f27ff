import { mkdirSync } from "node:fs"
import { dirname } from "node:path"
import { startChatServer } from "./server.js"

const databasePath = process.env.CHAT_DB ?? "./.data/chat.db"
mkdirSync(dirname(databasePath), { recursive: true })
const server = await startChatServer({
  databasePath,
  port: Number(process.env.PORT ?? 3000),
  hostname: process.env.HOST ?? "127.0.0.1",
})
console.log(`chat on ${server.url} (chats parked in ${databasePath}, a scripted model)`)
const stop = () => void server.close().then(() => process.exit(0))
process.on("SIGINT", stop)
process.on("SIGTERM", stop)
