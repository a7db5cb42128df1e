// Tool globs come from callers, so matching one must cost little whatever it holds: no regex
// (V8's backtracks: a 28-character glob of stars took 19 s against long names), only a scan
// whose work is bounded by len(glob) × len(name) character steps.

const STAR = 42; // '*'
const ANY = 63; // '?'

// Line terminators: the wildcards never match them (the regex this replaced compiled `*` to
// `.*` and `?` to `.`, which stop at them); only the same character in the glob does.
const LINE_BREAK = /[\n\r\u2028\u2029]/;
const LINE_BREAKS = /([\n\r\u2028\u2029])/;
const isLineBreak = (c: number) => c === 10 || c === 13 || c === 0x2028 || c === 0x2029;

/**
 * A matcher for one glob: `*` matches any run of characters (none included), `?` exactly one
 * (one UTF-16 unit), every other character itself; the whole name must match.
 */
export function compileGlob(glob: string): (name: string) => boolean {
  if (!glob.includes('*') && !glob.includes('?')) return (name) => name === glob;
  // `**` matches what `*` does; collapsing runs shortens the scan.
  const g = glob.replace(/\*+/g, '*');
  // Every character but a star consumes one of the name: a shorter name cannot match.
  const minLength = g.length - countStars(g);
  const hasStar = minLength !== g.length;
  // Only a glob with a line break of its own (none passes the request schema) needs the split.
  const match = LINE_BREAK.test(g) ? matchAcrossLines : matchLine;
  return (name) => {
    if (name.length < minLength || (!hasStar && name.length !== minLength)) return false;
    return match(g, name);
  };
}

/** Whether `name` matches `glob` (see {@link compileGlob}). */
export function globMatch(glob: string, name: string): boolean {
  return compileGlob(glob)(name);
}

function countStars(g: string): number {
  let n = 0;
  for (let i = 0; i < g.length; i++) if (g.charCodeAt(i) === STAR) n++;
  return n;
}

// A line break in the name can only be met by the same break in the glob: the two match when
// they have the same breaks in the same order and the pieces between them match.
function matchAcrossLines(glob: string, name: string): boolean {
  const globPieces = glob.split(LINE_BREAKS);
  const namePieces = name.split(LINE_BREAKS);
  if (globPieces.length !== namePieces.length) return false;
  return globPieces.every((p, i) => (i % 2 === 1 ? p === namePieces[i] : matchLine(p, namePieces[i])));
}

/**
 * The classic scan, for a glob without line breaks: advance both on a literal or `?`; on a `*`
 * note where it stands and let it match nothing; on a mismatch let the last `*` take one more
 * character and go on from there. Only the last star needs to move: whatever an earlier star
 * could take instead, the later one can absorb. Each star is retried at most len(name) times,
 * each retry walking at most the glob's text up to the next star. A line break in the name can
 * be taken by nothing here (no literal equals it, no wildcard takes it): meeting one under a
 * wildcard ends the match.
 */
function matchLine(glob: string, name: string): boolean {
  let g = 0;
  let n = 0;
  let star = -1;
  let resume = 0;
  while (n < name.length) {
    const c = g < glob.length ? glob.charCodeAt(g) : -1;
    if (c === STAR) {
      star = g++;
      resume = n;
    } else if (c === ANY ? !isLineBreak(name.charCodeAt(n)) : c !== -1 && c === name.charCodeAt(n)) {
      g++;
      n++;
    } else if (star >= 0) {
      // The star takes name[resume]; every character a star ends up with passes here.
      if (isLineBreak(name.charCodeAt(resume))) return false;
      g = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (g < glob.length && glob.charCodeAt(g) === STAR) g++;
  return g === glob.length;
}
