// A worker_threads body for bitable.test.mjs: opens the table `file` and
// posts the digest of everything it reads.
import { parentPort, workerData } from 'node:worker_threads'
import { Bitable } from '../../../bindings/node/index.js'
import { digest } from './bitable-data.mjs'

const { file, mmap } = workerData
const t = await Bitable.open(file, { mmap })
parentPort.postMessage(await digest(t))
t.close()
