// The engine worker: serves the refund agent until it is stopped or killed. Start as many as
// you like; a killed one's runs go on in the next (Restate: any worker at the registered URL;
// DBOS: a worker with the same executor id).
import { engineSettings, startWorker } from "./engine.js"

const settings = engineSettings()
const worker = await startWorker(settings)
process.stdout.write(`worker ready (${settings.engine})\n`)
const stop = () => void worker.close().then(() => process.exit(0))
process.on("SIGINT", stop)
process.on("SIGTERM", stop)
