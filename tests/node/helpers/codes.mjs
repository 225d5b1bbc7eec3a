// The assertion the suites give assert.throws and assert.rejects: an Error
// whose `code` is `c`.
import assert from 'node:assert/strict'

export const code = (c) => (e) => {
  assert.ok(e instanceof Error, `not an Error: ${e}`)
  assert.equal(e.code, c, e.message)
  return true
}
