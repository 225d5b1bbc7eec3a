// A fresh directory per test file, removed when the process exits.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

export function tmpDir(name) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `bale-node-${name}-`))
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

let n = 0
export function tmpStore(dir) {
  return path.join(dir, `store-${++n}.bale`)
}

export const nextTurn = () => new Promise((resolve) => setImmediate(resolve))
