// Types of the ES module entry (index.mjs): the CommonJS entry's, whose
// exports it re-exports, and its object as the default export.
export * from './index.js'
import * as bale from './index.js'
export default bale
