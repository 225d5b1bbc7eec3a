// Type-checked only: `import` from the package name gets the types of the
// ES module entry (index.d.mts) through the exports map.
import bale, { open, Tree, ObjectStore, type BaleError, type ErrorCode } from 'bale'

const t: Tree<string, string> = open('/tmp/x.bale', { keyEncoding: 'utf8', valueEncoding: 'utf8' })
const v: string | undefined = t.get('k')
const same: typeof open = bale.open
const code: ErrorCode = (bale.errorForCode('IO') as BaleError).code
// @ts-expect-error: not exported
import('bale/lib/encoding.js')
const objects: ObjectStore = bale.ObjectStore.open('/tmp/objects', { create: true })
const id: Promise<string> = objects.add('x')
void [v, same, code, id]
