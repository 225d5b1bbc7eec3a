'use strict'
// Key and value encodings. 'binary': Buffers out; Buffers, typed arrays,
// ArrayBuffers or strings (as UTF-8) in. 'utf8': strings out, the same in.
// 'json': any JSON value, stored as its JSON text. A handle has a pair,
// set at open (default binary/binary); a call that takes keys or values
// may replace either side with its own keyEncoding / valueEncoding.

const { invalid, isBytes, absent, describe, optionsOf, onlyKnown } = require('./args.js')

// A JS value as JSON text; what has none (undefined, a function, a bigint,
// a cycle) is INVALID_ARGUMENT.
function jsonEncode(v) {
  let s
  try {
    s = JSON.stringify(v)
  } catch (e) {
    throw Object.assign(invalid(`cannot encode ${describe(v)} as JSON: ${e.message}`), { cause: e })
  }
  if (s === undefined) throw invalid(`${describe(v)} has no JSON form`)
  return s
}

// Stored bytes that are not JSON text are the caller's mismatch of
// encodings, not damage: INVALID_ARGUMENT.
function jsonDecode(b) {
  try {
    return JSON.parse(b.toString('utf8'))
  } catch (e) {
    const m = `the stored bytes are not JSON (${e.message}); read them with the 'binary' encoding`
    throw Object.assign(invalid(m), { cause: e })
  }
}

// `encode: null` passes the value on as it is (the native side takes
// strings and bytes); `decode: null` returns the Buffer.
const CODECS = {
  binary: { name: 'binary', encode: null, decode: null },
  utf8: { name: 'utf8', encode: null, decode: (b) => b.toString('utf8') },
  json: { name: 'json', encode: jsonEncode, decode: jsonDecode },
}
const NAMES = Object.keys(CODECS)

// One frozen object per pair, so that `pair === DEFAULT` tells the
// binary/binary fast path.
const PAIRS = {}
for (const k of NAMES) {
  PAIRS[k] = {}
  for (const v of NAMES) PAIRS[k][v] = Object.freeze({ key: CODECS[k], value: CODECS[v] })
}
const DEFAULT = PAIRS.binary.binary
const OPTIONS = ['keyEncoding', 'valueEncoding']

// The pair of a handle (set by open and by the transaction calls).
const ENC = Symbol('bale.encodings')
// A handle's pair; DEFAULT for what is not a handle (the native side then
// refuses it).
const encOf = (h) => h?.[ENC] ?? DEFAULT

function side(name, base, what) {
  if (absent(name)) return base.name
  if (typeof name === 'string' && Object.hasOwn(CODECS, name)) return name
  throw invalid(`${what} must be ${NAMES.map((n) => `'${n}'`).join(', ')}, not ${describe(name)}`)
}

// `base` with the sides `o` names replaced.
function pairOf(base, o) {
  return PAIRS[side(o.keyEncoding, base.key, 'keyEncoding')][side(o.valueEncoding, base.value, 'valueEncoding')]
}

// The pair of a call whose options are only the encodings.
function callPair(h, options) {
  if (absent(options)) return encOf(h)
  const o = optionsOf(options, 'options')
  onlyKnown(o, OPTIONS, 'option')
  return pairOf(encOf(h), o)
}

// Options that may hold the encodings next to others (open, ranges,
// streams): the pair, and the options without the encodings.
function splitOptions(base, options) {
  if (absent(options) || typeof options !== 'object' || isBytes(options)) return [base, options]
  if (!Object.hasOwn(options, 'keyEncoding') && !Object.hasOwn(options, 'valueEncoding')) return [base, options]
  const { keyEncoding, valueEncoding, ...rest } = options
  return [pairOf(base, { keyEncoding, valueEncoding }), rest]
}

const encodeKey = (pair, k) => (pair.key.encode === null ? k : pair.key.encode(k))
const encodeValue = (pair, v) => (pair.value.encode === null ? v : pair.value.encode(v))
const decodeValue = (pair, v) => (v === undefined || pair.value.decode === null ? v : pair.value.decode(v))

// Range options with their bounds encoded (`prefix` is never encoded: it
// is the leading bytes of the stored keys, a string taken as UTF-8).
function encodeBounds(pair, options) {
  if (pair.key.encode === null || absent(options) || typeof options !== 'object') return options
  const out = { ...options }
  for (const b of ['gt', 'gte', 'lt', 'lte']) if (!absent(out[b])) out[b] = pair.key.encode(out[b])
  return out
}

module.exports = { ENC, DEFAULT, PAIRS, encOf, callPair, splitOptions, encodeKey, encodeValue, decodeValue, encodeBounds }
