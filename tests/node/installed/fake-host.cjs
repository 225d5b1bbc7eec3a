// Preloaded (node -r) by packages.test.mjs to make the process look like
// another host to the package's loader: BALE_FAKE_PLATFORM and
// BALE_FAKE_ARCH replace process.platform and process.arch, and
// BALE_FAKE_LIBC=musl makes /usr/bin/ldd read as musl's.
'use strict'
const fs = require('node:fs')

const { BALE_FAKE_PLATFORM: platform, BALE_FAKE_ARCH: arch, BALE_FAKE_LIBC: libc } = process.env
if (platform) Object.defineProperty(process, 'platform', { value: platform })
if (arch) Object.defineProperty(process, 'arch', { value: arch })
if (libc === 'musl') {
  const read = fs.readFileSync
  fs.readFileSync = function readFileSync(file, ...rest) {
    return file === '/usr/bin/ldd' ? 'musl libc (x86_64)' : read.call(this, file, ...rest)
  }
}
