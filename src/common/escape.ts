/**
 * Text from the network printed on a terminal: message ids, hosts, client ids and bodies are chosen by
 * clients, and a control character in them (an ANSI escape, a carriage return, a C1 CSI, a bidi
 * override) would let a client rewrite what an operator sees. These are shown as `\xNN` / `\uNNNN`.
 */

// C0 controls, DEL, C1 controls, the line/paragraph separators and the bidi embeddings, overrides and
// isolates ("Trojan Source").
/* eslint-disable no-control-regex */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const UNSAFE_KEEPING_LINES =
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
/* eslint-enable no-control-regex */

function escapeChar(c: string): string {
  const n = c.charCodeAt(0);
  return n <= 0xff ? `\\x${n.toString(16).padStart(2, '0')}` : `\\u${n.toString(16).padStart(4, '0')}`;
}

/** Every control character escaped: for one-line values (ids, hosts, names). */
export function escapeControl(s: string): string {
  return s.replace(UNSAFE, escapeChar);
}

/** Control characters escaped except newline and tab: for multi-line text such as a message body. */
export function escapeControlKeepingLines(s: string): string {
  return s.replace(UNSAFE_KEEPING_LINES, escapeChar);
}
