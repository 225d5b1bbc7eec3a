// Type-checked only: `require` of the package name gets the types of the
// CommonJS entry (index.d.ts) through the exports map.
import bale = require('bale')

const t: bale.Tree<Buffer, unknown> = bale.open('/tmp/x.bale', { valueEncoding: 'json' })
const v: Buffer | undefined = bale.Tree.open('/tmp/x.bale').get('k')
const codes: bale.ErrorCode[] = bale.errorCodes()
// @ts-expect-error: no default export on the CommonJS side
void bale.default
const objects: bale.ObjectStore = bale.ObjectStore.open('/tmp/objects', { singleFile: true })
const id: string = objects.addSync('x')
void [t, v, codes, id]
