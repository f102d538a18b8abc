// Positions of the CBOR items inside an envelope, and byte edits that keep it well-formed
// around the change: what the tampering scenarios mutate (gen-vectors.mjs).

function head(b, pos) {
  if (pos >= b.length) throw new Error('cbor: eof');
  const ib = b[pos], major = ib >> 5, minor = ib & 31;
  let val, hl;
  if (minor < 24) [val, hl] = [minor, 1];
  else if (minor === 24) [val, hl] = [b[pos + 1], 2];
  else if (minor === 25) [val, hl] = [b.readUInt16BE(pos + 1), 3];
  else if (minor === 26) [val, hl] = [b.readUInt32BE(pos + 1), 5];
  else if (minor === 27) [val, hl] = [Number(b.readBigUInt64BE(pos + 1)), 9];
  else if (minor === 22 && major === 7) [val, hl] = [null, 1];
  else throw new Error(`cbor: unsupported head ${ib.toString(16)}`);
  return { major, minor, val, hl, start: pos, body: pos + hl };
}
/** Parses one item; returns {start, body, end, major, val, data:[s,e] for bytes, entries:[[k,v]] for maps}. */
function item(b, pos) {
  const h = head(b, pos);
  if (h.major === 0 || h.major === 7) return { ...h, end: h.body };
  if (h.major === 2) return { ...h, data: [h.body, h.body + h.val], end: h.body + h.val };
  if (h.major === 5) {
    const entries = [];
    let p = h.body;
    for (let i = 0; i < h.val; i++) {
      const k = item(b, p);
      const v = item(b, k.end);
      entries.push([k, v]);
      p = v.end;
    }
    return { ...h, entries, end: p };
  }
  throw new Error(`cbor: unsupported major ${h.major}`);
}
/** Offsets of every field of an envelope (absolute positions in the envelope bytes). */
export function locate(envBytes) {
  const b = Buffer.from(envBytes);
  const root = item(b, 0);
  const [, version] = root.entries[0];
  const [, macMap] = root.entries[1];
  const [msgKey, msgBytes] = root.entries[2];
  const mac = macMap.entries[0][1];
  const r = { root, version, mac: mac.data, macItem: mac, msgKey, msgBytes, msg: msgBytes.data };
  let p = msgBytes.data[0];
  const type = item(b, p);
  r.type = type;
  let cm;
  if (type.val === 2) {
    const pkm = item(b, type.end);
    r.pkm = pkm;
    r.prekeyId = pkm.entries[0][1];
    r.baseKey = pkm.entries[1][1].entries[0][1].data;
    r.identityKey = pkm.entries[2][1].entries[0][1].entries[0][1].data;
    cm = pkm.entries[3][1];
  } else {
    cm = item(b, type.end);
  }
  r.cm = cm;
  r.sessionTag = cm.entries[0][1].data;
  r.counter = cm.entries[1][1];
  r.prevCounter = cm.entries[2][1];
  r.ratchetKey = cm.entries[3][1].entries[0][1].data;
  r.cipherText = cm.entries[4][1].data;
  return r;
}
export function flip(bytes, offset, bit = 0) {
  const c = Uint8Array.from(bytes);
  c[offset] ^= 1 << bit;
  return c;
}
function bstrHead(n) {
  if (n < 24) return [0x40 | n];
  if (n < 256) return [0x58, n];
  if (n < 65536) return [0x59, n >> 8, n & 255];
  return [0x5a, (n >>> 24) & 255, (n >> 16) & 255, (n >> 8) & 255, n & 255];
}
/** Replaces bytes [s,e) of the embedded message and fixes the envelope's message length. */
export function spliceMessage(envBytes, s, e, insert) {
  const L = locate(envBytes);
  const b = Uint8Array.from(envBytes);
  const msg = [...b.slice(L.msg[0], s), ...insert, ...b.slice(e, L.msg[1])];
  return Uint8Array.from([...b.slice(0, L.msgBytes.start), ...bstrHead(msg.length), ...msg, ...b.slice(L.msg[1])]);
}
