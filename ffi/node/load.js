// Finds the native addon for this platform, following napi-rs's layout: `proteus.<triple>.node`
// next to this file (a local build, or the binary shipped in this package), else the package
// `@proteus-engine/node-<triple>` (one per platform, as napi-rs publishes them). Undefined when
// there is none, or when PROTEUS_BACKEND=wasm asks for the wasm build.

import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);

/** Whether this Linux runs on musl rather than glibc. */
function isMusl() {
  try {
    return readFileSync('/usr/bin/ldd', 'utf8').includes('musl');
  } catch {
    return !process.report?.getReport?.().header?.glibcVersionRuntime;
  }
}

/** napi-rs's name of this platform, e.g. linux-x64-gnu, darwin-arm64, win32-x64-msvc. */
export function platformTriple() {
  const { platform, arch } = process;
  if (platform === 'linux') return `linux-${arch}-${isMusl() ? 'musl' : 'gnu'}`;
  if (platform === 'win32') return `win32-${arch}-msvc`;
  return `${platform}-${arch}`;
}

export function loadAddon() {
  if (process.env.PROTEUS_BACKEND === 'wasm') return undefined;
  const triple = platformTriple();
  const local = new URL(`./proteus.${triple}.node`, import.meta.url);
  if (existsSync(local)) return require(fileURLToPath(local));
  try {
    return require(`@proteus-engine/node-${triple}`);
  } catch (e) {
    if (e?.code !== 'MODULE_NOT_FOUND') throw e;
  }
  if (process.env.PROTEUS_BACKEND === 'native') {
    throw new Error(`no native Proteus addon for ${triple} (PROTEUS_BACKEND=native)`);
  }
  return undefined;
}
