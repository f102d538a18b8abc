#!/usr/bin/env node
// Where a wasm module's code bytes go: the size of each function body, by function and by the
// crate or module its Rust path names, from a module that kept its function names
// (PROTEUS_WEB_NAMES=1 ffi/web/build.sh writes one next to cargo's output).
//
//   node scripts/wasm-sizes.mjs MODULE.wasm [TOP] [DEPTH]
//
// TOP functions are listed (default 40); paths are grouped by their first DEPTH segments
// (default 2: `proteus_client::storage`).
import { readFileSync } from 'node:fs';

const [file, top = '40', depth = '2'] = process.argv.slice(2);
if (!file) {
  console.error('usage: node scripts/wasm-sizes.mjs MODULE.wasm [TOP] [DEPTH]');
  process.exit(2);
}
const bytes = readFileSync(file);
let at = 8;
const leb = () => {
  let result = 0;
  let shift = 0;
  for (;;) {
    const b = bytes[at++];
    result += (b & 0x7f) * 2 ** shift;
    shift += 7;
    if (b < 0x80) return result;
  }
};
const name = () => {
  const n = leb();
  const s = bytes.toString('utf8', at, at + n);
  at += n;
  return s;
};

let imported = 0;
let bodies = [];
const names = new Map();
while (at < bytes.length) {
  const id = bytes[at++];
  const size = leb();
  const end = at + size;
  if (id === 2) {
    // imports: count the functions, whose indices come before the module's own
    for (let n = leb(); n > 0; n--) {
      name();
      name();
      const kind = bytes[at++];
      if (kind === 0) {
        imported++;
        leb();
      } else if (kind === 1) {
        at++;
        const flags = leb();
        leb();
        if (flags & 1) leb();
      } else if (kind === 2) {
        const flags = leb();
        leb();
        if (flags & 1) leb();
      } else if (kind === 3) {
        at += 2;
      } else {
        leb();
        leb();
      }
    }
  } else if (id === 10) {
    const n = leb();
    bodies = new Array(n);
    for (let i = 0; i < n; i++) {
      const len = leb();
      bodies[i] = len;
      at += len;
    }
  } else if (id === 0 && name() === 'name') {
    while (at < end) {
      const sub = bytes[at++];
      const subSize = leb();
      const subEnd = at + subSize;
      if (sub === 1) for (let n = leb(); n > 0; n--) names.set(leb(), name());
      at = subEnd;
    }
  }
  at = end;
}

/**
 * The segments of a function's name: a demangled Rust path (`<proteus_client[…]::client::
 * Client>::encrypt`: crate hashes dropped) or a legacy-mangled symbol (`_ZN3foo3bar17h…E`).
 */
function path(symbol) {
  if (!symbol.startsWith('_ZN')) return symbol.replace(/\[[0-9a-f]+\]/g, '').split('::');
  const parts = [];
  let i = 3;
  while (i < symbol.length && symbol[i] !== 'E') {
    let j = i;
    while (symbol[j] >= '0' && symbol[j] <= '9') j++;
    const n = Number(symbol.slice(i, j));
    if (!n) break;
    parts.push(symbol.slice(j, j + n));
    i = j + n;
  }
  if (/^h[0-9a-f]{16}$/.test(parts.at(-1) ?? '')) parts.pop();
  return parts.map((p) => p.replaceAll('$LT$', '<').replaceAll('$GT$', '>').replaceAll('$u20$', ' ').replaceAll('..', '::'));
}

const total = bodies.reduce((a, b) => a + b, 0);
const functions = bodies.map((size, i) => ({ size, path: path(names.get(imported + i) ?? `#${imported + i}`) }));
functions.sort((a, b) => b.size - a.size);
console.log(`${file}: ${bytes.length} bytes, ${bodies.length} functions, code ${total} bytes`);
console.log(`\nlargest ${top} functions:`);
for (const f of functions.slice(0, Number(top))) console.log(`${String(f.size).padStart(7)}  ${f.path.join('::')}`);
const groups = new Map();
for (const f of functions) {
  // The path of the item itself: `<a::b::T as c::Trait>::f` and `<&a::T>::f` group under a::b.
  const own = f.path.join('::').replace(/^[<&]+/, '').split(/[<> ]/)[0].split('::');
  const key = own.slice(0, Number(depth)).join('::');
  groups.set(key, (groups.get(key) ?? 0) + f.size);
}
console.log(`\nby path (first ${depth} segments):`);
for (const [key, size] of [...groups].sort((a, b) => b[1] - a[1]).slice(0, 40)) {
  console.log(`${String(size).padStart(7)}  ${key}`);
}
