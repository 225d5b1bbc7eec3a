// A pusher for remote.test.mjs, run as a worker thread (workerData) or a
// child process (argv): opens the object store at `dir`, says 'ready',
// waits for 'go', pushes every object to its remote 'origin' with the ref
// `ref`, and sends back the report.
import { isMainThread, parentPort, workerData } from 'node:worker_threads'
import { ObjectStore } from '../../../bindings/node/index.js'

const worker = !isMainThread
const { dir, ref } = worker ? workerData : { dir: process.argv[2], ref: process.argv[3] }
const send = (m) => (worker ? parentPort.postMessage(m) : process.send(m))
const go = new Promise((resolve) => (worker ? parentPort : process).once('message', resolve))

const store = ObjectStore.open(dir)
const [first] = store.idsSync()
send('ready')
await go
try {
  const report = await store.push('origin', null, { refs: { [ref]: first }, threads: 2 })
  send({ report })
} catch (e) {
  send({ error: `${e.code}: ${e.message}` })
}
store.close()
if (!worker) process.disconnect()
