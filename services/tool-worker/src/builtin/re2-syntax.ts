// context_search took JavaScript regular expressions before it took RE2's. RE2 reads most of
// what models write the same way; `\uXXXX` and `\u{X}` it does not know, so they are rewritten
// to its `\x{X}` (a surrogate pair written as two escapes becomes one code point, as JS's
// unicode mode reads it). Everything else goes to RE2 unchanged, to accept or refuse.

const U_ESCAPE = /^u(?:\{([0-9A-Fa-f]{1,6})\}|([0-9A-Fa-f]{4}))/;

/** `pattern` with JavaScript's `\u` escapes written the RE2 way. */
export function toRe2Syntax(pattern: string): string {
  if (!pattern.includes('\\u')) return pattern;
  let out = '';
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    if (ch !== '\\') {
      out += ch;
      continue;
    }
    const m = U_ESCAPE.exec(pattern.slice(i + 1, i + 10));
    if (!m) {
      // Any other escape, `\\` included, is copied whole so that its second character is not
      // read as the start of an escape.
      out += pattern.slice(i, i + 2);
      i++;
      continue;
    }
    let code = parseInt(m[1] ?? m[2], 16);
    i += m[0].length;
    const low =
      m[2] !== undefined && code >= 0xd800 && code <= 0xdbff
        ? /^\\u(d[c-f][0-9a-f]{2})/i.exec(pattern.slice(i + 1, i + 7))
        : null;
    if (low) {
      code = 0x10000 + ((code - 0xd800) << 10) + (parseInt(low[1], 16) - 0xdc00);
      i += low[0].length;
    }
    out += `\\x{${code.toString(16)}}`;
  }
  return out;
}
