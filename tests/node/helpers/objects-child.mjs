// A child process for objects.test.mjs (child_process.fork): opens its own
// handle on the store at argv[2] and adds argv[3] objects, sending
// { i, id } after each add has resolved (it is durable then), then
// { done }.
import { ObjectStore } from '../../../bindings/node/index.js'
import { content } from './objects-data.mjs'

const [dir, n] = process.argv.slice(2)
const store = ObjectStore.open(dir)
for (let i = 0; i < Number(n); i++) {
  const id = await store.add(content('child', i))
  process.send({ i, id })
}
store.close()
process.send({ done: Number(n) }, () => process.disconnect())
