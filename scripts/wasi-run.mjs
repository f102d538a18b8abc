// Runs a wasm32-wasip1 program (a test binary) under Node's WASI: cargo's runner for
// `cargo test --target wasm32-wasip1` (scripts/test.sh wasm). The working directory is
// preopened so test harnesses can read and write beside the checkout.
import { readFile } from 'node:fs/promises';
import { WASI } from 'node:wasi';

const [file, ...args] = process.argv.slice(2);
const wasi = new WASI({
  version: 'preview1',
  args: [file, ...args],
  env: process.env,
  preopens: { '.': process.cwd() },
  returnOnExit: true,
});
const module = await WebAssembly.compile(await readFile(file));
const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
process.exitCode = wasi.start(instance);
