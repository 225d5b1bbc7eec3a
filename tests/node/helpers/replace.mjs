// Whether this system renames a file over one that another handle has open
// (POSIX rename semantics). Unix always does; Windows does on NTFS from
// Windows 10 1709 on, but Wine 8, where the Windows runs happen here,
// refuses to replace a file any handle has open (FORMAT.md, "Windows").
// Compaction, the object store's clean and a bitable build over an open
// table replace an open file: where the system refuses, they must fail with
// IO and leave the store as it was, and the tests check that instead.
// bale itself answers: a compaction of a scratch store with a second
// handle open.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Tree } from '../../../bindings/node/index.js'

// What the core adds to the error when the system refuses.
const REFUSAL = /this system cannot replace a file that is open/

let answer

export function replacesOpenFiles() {
  if (answer !== undefined) return answer
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bale-node-replace-'))
  const t = Tree.open(path.join(dir, 'probe.bale'), { create: true })
  const other = Tree.open(t.path)
  try {
    t.putSync('k', 'v')
    try {
      t.compactSync()
      answer = true
    } catch (e) {
      if (!(e instanceof Error && e.code === 'IO' && REFUSAL.test(e.message))) throw e
      answer = false
    }
  } finally {
    other.close()
    t.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
  // Only Windows may refuse: elsewhere the tests take their main path.
  if (process.platform !== 'win32') assert.equal(answer, true, `${process.platform} refused to replace an open file`)
  return answer
}

/** For assert.throws and assert.rejects: the IO error of a refused replace. */
export function refusal(e) {
  assert.ok(e instanceof Error, `not an Error: ${e}`)
  assert.equal(e.code, 'IO', e.message)
  assert.match(e.message, REFUSAL)
  return true
}
