// Base64 and UTF-8 for the chat page's records and relay requests.

export const utf8 = new TextEncoder();

export function b64(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/** The bytes of base64 `text`, or undefined if it is not base64. */
export function unb64(text) {
  try {
    const s = atob(text);
    return Uint8Array.from(s, (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
}
