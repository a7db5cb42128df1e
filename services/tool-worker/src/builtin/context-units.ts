/** How a document is cut into units that a chunk never splits (unless one alone is too big). */
export type ChunkUnitKind = 'lines' | 'paragraphs' | 'markdown' | 'json';

/** A run of characters `[start, end)` of a document; markdown sections carry their heading path. */
export interface TextUnit {
  start: number;
  end: number;
  title?: string;
}

/**
 * The units of a text, contiguous and covering it whole: each line with its line break; each
 * paragraph with the blank lines after it; each markdown section (from its heading to the next
 * heading, a preamble before the first) with its heading path; each top-level item of a JSON
 * array or member of a JSON object with the comma after it (the first with the opening bracket,
 * the last with the closing one). Throws a RangeError for JSON whose structure is broken.
 */
export function textUnits(text: string, kind: ChunkUnitKind): TextUnit[] {
  if (text.length === 0) return [];
  switch (kind) {
    case 'lines':
      return lineUnits(text);
    case 'paragraphs':
      return paragraphUnits(text);
    case 'markdown':
      return markdownUnits(text);
    case 'json':
      return jsonUnits(text);
  }
}

/** Each line `[start, end)` with its line break. */
function lineUnits(text: string): TextUnit[] {
  const units: TextUnit[] = [];
  for (let start = 0; start < text.length; ) {
    const nl = text.indexOf('\n', start);
    const end = nl < 0 ? text.length : nl + 1;
    units.push({ start, end });
    start = end;
  }
  return units;
}

const isBlank = (text: string, u: TextUnit) => {
  for (let i = u.start; i < u.end; i++) if (!' \t\r\n'.includes(text[i]!)) return false;
  return true;
};

/** Paragraphs: runs of non-blank lines, each with the blank lines that follow it (leading blank lines go with the first). */
function paragraphUnits(text: string): TextUnit[] {
  const units: TextUnit[] = [];
  let current: TextUnit | null = null;
  let hasText = false;
  let blankAfterText = false;
  for (const line of lineUnits(text)) {
    const blank = isBlank(text, line);
    // A line of text after a blank one that followed text starts the next paragraph.
    if (!blank && blankAfterText && current) {
      units.push(current);
      current = null;
      hasText = false;
      blankAfterText = false;
    }
    if (current) current.end = line.end;
    else current = { start: line.start, end: line.end };
    if (!blank) hasText = true;
    else if (hasText) blankAfterText = true;
  }
  if (current) units.push(current);
  return units;
}

/** A fence line (``` or ~~~ after at most 3 spaces): its marker character and length, else null. */
function fenceOf(line: string): { char: string; length: number } | null {
  let i = 0;
  while (i < 3 && line[i] === ' ') i++;
  const char = line[i];
  if (char !== '`' && char !== '~') return null;
  let n = 0;
  while (line[i + n] === char) n++;
  return n >= 3 ? { char, length: n } : null;
}

/** An ATX heading line (`## Title ##`): its level and text, else null. Scanned by hand: no backtracking. */
function atxHeading(line: string): { level: number; text: string } | null {
  let i = 0;
  while (i < 3 && line[i] === ' ') i++;
  let level = 0;
  while (line[i + level] === '#') level++;
  if (level < 1 || level > 6) return null;
  const after = line[i + level];
  if (after !== undefined && after !== ' ' && after !== '\t' && after !== '\r' && after !== '\n') return null;
  let end = line.length;
  const ws = (c: string | undefined) => c === ' ' || c === '\t' || c === '\r' || c === '\n';
  while (end > i + level && ws(line[end - 1])) end--;
  // A closing run of #s, after a space, is not part of the text.
  let hashes = end;
  while (hashes > i + level && line[hashes - 1] === '#') hashes--;
  if (hashes < end && (hashes === i + level || ws(line[hashes - 1]))) end = hashes;
  let start = i + level;
  while (start < end && ws(line[start])) start++;
  while (end > start && ws(line[end - 1])) end--;
  return { level, text: line.slice(start, end) };
}

/** A setext underline (`===` or `---`, alone on its line): the heading level it makes, else 0. */
function setextLevel(line: string): number {
  const s = line.trim();
  if (s.length === 0) return 0;
  const c = s[0];
  if (c !== '=' && c !== '-') return 0;
  for (const ch of s) if (ch !== c) return 0;
  return c === '=' ? 1 : 2;
}

/**
 * Markdown sections: one from each heading (ATX `#`…`######`, or setext: a paragraph line
 * underlined with `===` or `---`) to the next, never inside a fenced code block; the text before
 * the first heading is a section of its own, without a title. A section's title is its heading
 * path: its heading and those above it, outermost first (`Install > From npm`).
 */
function markdownUnits(text: string): TextUnit[] {
  const lines = lineUnits(text);
  const starts: Array<{ at: number; level: number; text: string }> = [];
  let fence: { char: string; length: number } | null = null;
  let previousText: TextUnit | null = null;
  for (const line of lines) {
    const s = text.slice(line.start, line.end);
    const f = fenceOf(s);
    if (fence) {
      if (f && f.char === fence.char && f.length >= fence.length && s.trim() === f.char.repeat(f.length)) fence = null;
      previousText = null;
      continue;
    }
    if (f) {
      fence = f;
      previousText = null;
      continue;
    }
    const atx = atxHeading(s);
    if (atx) {
      starts.push({ at: line.start, ...atx });
      previousText = null;
      continue;
    }
    const setext = previousText ? setextLevel(s) : 0;
    if (setext && previousText) {
      starts.push({
        at: previousText.start,
        level: setext,
        text: text.slice(previousText.start, previousText.end).trim(),
      });
      previousText = null;
      continue;
    }
    previousText = isBlank(text, line) ? null : line;
  }
  const units: TextUnit[] = [];
  if (!starts.length || starts[0]!.at > 0) units.push({ start: 0, end: starts[0]?.at ?? text.length, title: '' });
  const path: Array<{ level: number; text: string }> = [];
  for (const [k, h] of starts.entries()) {
    while (path.length && path.at(-1)!.level >= h.level) path.pop();
    path.push(h);
    units.push({ start: h.at, end: starts[k + 1]?.at ?? text.length, title: path.map((p) => p.text).join(' > ') });
  }
  return units;
}

const isSpace = (c: string | undefined) => c === ' ' || c === '\t' || c === '\n' || c === '\r';

/**
 * Top-level JSON items: each array item or object member with the comma after it, scanned
 * without building the values (a document may be tens of megabytes). An array's items are
 * titled by their index (`[3]`), an object's members by their key. A scalar document is one unit.
 */
function jsonUnits(text: string): TextUnit[] {
  let i = 0;
  const skipSpace = () => {
    while (isSpace(text[i])) i++;
  };
  const fail = (why: string): never => {
    throw new RangeError(`not valid JSON at character ${i}: ${why}`);
  };
  const skipString = () => {
    // At the opening quote.
    for (i++; i < text.length; i++) {
      const c = text[i];
      if (c === '\\') i++;
      else if (c === '"') {
        i++;
        return;
      }
    }
    fail('a string is not closed');
  };
  // Skips one value, nested ones included, by counting brackets (no recursion: any depth).
  const skipValue = () => {
    let depth = 0;
    do {
      skipSpace();
      const c = text[i];
      if (c === undefined) fail('the document ends inside a value');
      if (c === '"') skipString();
      else if (c === '[' || c === '{') {
        depth++;
        i++;
      } else if (c === ']' || c === '}') {
        if (depth === 0) fail(`unexpected "${c}"`);
        depth--;
        i++;
      } else if (c === ',' || c === ':') {
        if (depth === 0) fail(`unexpected "${c}"`);
        i++;
      } else {
        const from = i;
        while (i < text.length && !isSpace(text[i]) && !',:]}[{"'.includes(text[i]!)) i++;
        if (i === from) fail(`unexpected "${c}"`);
      }
    } while (depth > 0);
  };
  skipSpace();
  const open = text[i];
  if (open !== '[' && open !== '{') {
    skipValue();
    skipSpace();
    if (i < text.length) fail('more after the value');
    return [{ start: 0, end: text.length }];
  }
  const close = open === '[' ? ']' : '}';
  i++;
  const units: TextUnit[] = [];
  let start = 0;
  skipSpace();
  if (text[i] === close) return [{ start: 0, end: text.length }];
  for (let index = 0; ; index++) {
    skipSpace();
    let title = `[${index}]`;
    if (open === '{') {
      if (text[i] !== '"') fail('a member must start with its key');
      const keyStart = i;
      skipString();
      title = JSON.parse(text.slice(keyStart, i)) as string;
      skipSpace();
      if (text[i] !== ':') fail('":" expected after a key');
      i++;
    }
    skipValue();
    skipSpace();
    if (text[i] === ',') {
      i++;
      units.push({ start, end: i, title });
      start = i;
    } else if (text[i] === close) {
      i++;
      skipSpace();
      if (i < text.length) fail('more after the document');
      units.push({ start, end: text.length, title });
      return units;
    } else fail(`"," or "${close}" expected`);
  }
}
