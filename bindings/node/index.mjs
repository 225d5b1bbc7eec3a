// The ES module entry: the very objects of the CommonJS entry (index.js),
// so that `import` and `require` in one program share one native addon, one
// set of classes (`instanceof` holds across them) and one Buffer slab. Node
// finds the names in index.js's `module.exports = { ... }`.
export * from './index.js'
export { default } from './index.js'
