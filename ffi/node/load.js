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

/**
 * napi-rs's name of a platform, this process's unless given: linux-x64-gnu, linux-arm64-gnu,
 * darwin-arm64, win32-x64-msvc, ...
 */
export function platformTriple(platform = process.platform, arch = process.arch, musl = platform === 'linux' && isMusl()) {
  if (platform === 'linux') return `linux-${arch}-${musl ? 'musl' : 'gnu'}`;
  if (platform === 'win32') return `win32-${arch}-msvc`;
  return `${platform}-${arch}`;
}

/**
 * The addon of the platform `triple` (this process's unless given): the package ships
 * `proteus.linux-x64-gnu.node` and `proteus.linux-arm64-gnu.node`, so an x64 or arm64 Linux with
 * glibc loads its own, and any other platform gets undefined (the wasm build) unless a package
 * `@proteus-engine/node-<triple>` is installed.
 */
export function loadAddon(triple = platformTriple()) {
  if (process.env.PROTEUS_BACKEND === 'wasm') return undefined;
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
