'use strict'
// Checks of the arguments that stay on the JS side (encodings, stream and
// batch options); each failure is a coded INVALID_ARGUMENT error, like the
// ones the native side raises.

const { errorForCode } = require('../binding.js')

const invalid = (message) => errorForCode('INVALID_ARGUMENT', message)
const isBytes = (v) => ArrayBuffer.isView(v) || v instanceof ArrayBuffer
const absent = (v) => v === undefined || v === null

// What a value is, for messages.
function describe(v) {
  if (absent(v)) return String(v)
  if (typeof v === 'object') return isBytes(v) ? 'bytes' : Array.isArray(v) ? 'an array' : 'an object'
  if (typeof v === 'string') return v.length <= 40 ? JSON.stringify(v) : 'a long string'
  return typeof v === 'number' || typeof v === 'boolean' ? String(v) : `a ${typeof v}`
}

// An options argument: an object, or `undefined`/`null` for none ({}).
function optionsOf(options, what) {
  if (absent(options)) return {}
  if (typeof options !== 'object' || isBytes(options)) throw invalid(`${what} must be an object, not ${describe(options)}`)
  return options
}

// Refuses the names of `options` that are not in `known`.
function onlyKnown(options, known, what) {
  for (const name of Object.keys(options)) {
    if (!known.includes(name)) throw invalid(`unknown ${what} ${JSON.stringify(name)} (known: ${known.join(', ')})`)
  }
}

// A count option; `undefined` and `null` leave it out.
function offsetOption(v, name) {
  if (absent(v)) return undefined
  if (!Number.isSafeInteger(v) || v < 0) throw invalid(`${name} must be a non-negative integer, not ${describe(v)}`)
  return v
}

// Makes the methods of class C refuse another receiver with INVALID_ARGUMENT
// (a method taken off its object: `const { stat } = tree; stat()`, where V8
// would throw a bare "Illegal invocation"); the ones named in `async`
// reject instead. For the methods on the prototype now: index.js guards
// the native ones before it adds its own.
function guardReceivers(C, async = []) {
  const proto = C.prototype
  for (const name of Object.getOwnPropertyNames(proto)) {
    const f = Object.getOwnPropertyDescriptor(proto, name).value
    if (typeof f !== 'function' || name === 'constructor' || name.startsWith('_')) continue
    const article = /^[AEIOU]/.test(C.name) ? 'an' : 'a'
    const wrong = () => invalid(`${C.name}.${name} must be called on ${article} ${C.name}`)
    const guarded = async.includes(name)
      ? function (...args) {
          return this instanceof C ? f.apply(this, args) : Promise.reject(wrong())
        }
      : function (...args) {
          if (!(this instanceof C)) throw wrong()
          return f.apply(this, args)
        }
    proto[name] = Object.defineProperty(guarded, 'name', { value: name })
  }
}

module.exports = { invalid, isBytes, absent, describe, optionsOf, onlyKnown, offsetOption, guardReceivers }
