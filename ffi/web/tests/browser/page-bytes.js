// Bytes between a test page and its test: base64 (page.evaluate passes JSON), and UTF-8 text.
// Shared by the pages of cryptobox.mjs and faults.mjs.

export const b64 = (bytes) => {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
};
export const unb64 = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
export const text = (bytes) => new TextDecoder().decode(bytes);
