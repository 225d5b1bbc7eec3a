// A second process for process.test.mjs.
//   write FILE N      commits N puts (one await each), prints "done N"
//   hold FILE         opens a write transaction, prints "holding", keeps it
//                     until a line arrives on stdin, commits, prints "released"
import fs from 'node:fs'
import { Tree } from '../../../bindings/node/index.js'

const [mode, file, n] = process.argv.slice(2)
const tree = Tree.open(file)
if (mode === 'write') {
  for (let i = 0; i < Number(n); i++) await tree.put(`child/${String(i).padStart(5, '0')}`, `value ${i}`)
  console.log(`done ${n}`)
} else if (mode === 'hold') {
  tree.transactionSync((txn) => {
    txn.put('held', 'by child')
    process.stdout.write('holding\n')
    fs.readSync(0, Buffer.alloc(1)) // blocks with the writer lock held
  })
  console.log('released')
}
tree.close()
