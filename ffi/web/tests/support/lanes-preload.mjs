// Preloaded (NODE_OPTIONS=--import) by scripts/suites/web.sh's second `node --test tests/`: every
// test process loads the opt-in lanes module before its tests run, so the suite runs once per
// build. It records the byte length of the module WebAssembly.instantiate is given, which
// tests/lanes.test.mjs checks against pkg/proteus_web_lanes_bg.wasm.
const instantiate = WebAssembly.instantiate;
WebAssembly.instantiate = function (source, ...rest) {
  if (ArrayBuffer.isView(source)) globalThis.__proteusWasmBytes ??= source.byteLength;
  return instantiate.call(this, source, ...rest);
};
const { initLanes } = await import('../../pkg/lanes.js');
await initLanes();
