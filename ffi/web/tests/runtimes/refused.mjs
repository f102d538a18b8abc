// The last check of tests/consumer/use.mjs without Node's error code, for Bun and Deno (which
// refuse the import with ERR_MODULE_NOT_FOUND): the package's internal wasm-bindgen client is
// installed but not importable, because the exports map leaves it out, while the package is.
// Run by run.mjs in the consumer project under Node, Bun and Deno.
import assert from 'node:assert/strict';
import fs from 'node:fs';

const { Client } = await import('@proteus-engine/web');
assert.equal(typeof Client.inMemory, 'function');
for (const internal of ['proteus_web.js', 'stores.js', 'wire.js']) {
  assert.ok(fs.existsSync(`node_modules/@proteus-engine/web/${internal}`), `${internal} is in the package`);
  await assert.rejects(import(`@proteus-engine/web/${internal}`), `@proteus-engine/web/${internal} is refused`);
}
console.log('consumer (internal module refused) ok');
