// A horizontal bar chart as a PNG, with no dependency: an RGB canvas, a 5×7 bitmap font
// (capitals, digits and a little punctuation; other letters are drawn as capitals) and a PNG
// encoder on node:zlib.
import { deflateSync } from 'node:zlib';

// Each glyph: 7 rows of 5 dots, row after row ('#' = ink).
const GLYPHS = {
  A: '.###.#...##...#######...##...##...#',
  B: '####.#...##...#####.#...##...#####.',
  C: '.###.#...##....#....#....#...#.###.',
  D: '####.#...##...##...##...##...#####.',
  E: '######....#....####.#....#....#####',
  F: '######....#....####.#....#....#....',
  G: '.###.#...##....#.####...##...#.####',
  H: '#...##...##...#######...##...##...#',
  I: '.###...#....#....#....#....#...###.',
  J: '..###...#....#....#....#.#..#..##..',
  K: '#...##..#.#.#..##...#.#..#..#.#...#',
  L: '#....#....#....#....#....#....#####',
  M: '#...###.###.#.##.#.##...##...##...#',
  N: '#...##...###..##.#.##..###...##...#',
  O: '.###.#...##...##...##...##...#.###.',
  P: '####.#...##...#####.#....#....#....',
  Q: '.###.#...##...##...##.#.##..#..##.#',
  R: '####.#...##...#####.#.#..#..#.#...#',
  S: '.#####....#.....###.....#....#####.',
  T: '#####..#....#....#....#....#....#..',
  U: '#...##...##...##...##...##...#.###.',
  V: '#...##...##...##...##...#.#.#...#..',
  W: '#...##...##...##.#.##.#.##.#.#.#.#.',
  X: '#...##...#.#.#...#...#.#.#...##...#',
  Y: '#...##...#.#.#...#....#....#....#..',
  Z: '#####....#...#...#...#...#....#####',
  0: '.###.#...##..###.#.###..##...#.###.',
  1: '..#...##....#....#....#....#...###.',
  2: '.###.#...#....#...#...#...#...#####',
  3: '#####...#...#.....#.....##...#.###.',
  4: '...#...##..#.#.#..#.#####...#....#.',
  5: '######....####.....#....##...#.###.',
  6: '..##..#...#....####.#...##...#.###.',
  7: '#####....#...#...#...#....#....#...',
  8: '.###.#...##...#.###.#...##...#.###.',
  9: '.###.#...##...#.####....#...#..##..',
  ' ': '...................................',
  '.': '..........................##...##..',
  ',': '.....................##....#...#...',
  ':': '......##...##........##...##.......',
  ';': '......##...##........##....#...#....',
  '-': '...............#####...............',
  '+': '.......#....#..#####..#....#.......',
  '/': '....#...#....#...#...#....#...#....',
  '(': '...#...#...#....#....#.....#.....#.',
  ')': '.#.....#.....#....#....#...#...#...',
  '%': '##..###.#....#...#...#....#.###..##',
  '<': '...#...#...#...#.....#.....#.....#.',
  '>': '.#.....#.....#.....#...#...#...#...',
  '=': '..........#####.....#####..........',
  '_': '..............................#####',
  "'": '..#....#...#.......................',
  '×': '.....#...#.#.#...#...#.#.#...#.....',
  '*': '.......#..#.#.#.###.#.#.#..#.......',
  '|': '..#....#....#....#....#....#....#..',
  '≈': '......##.##.##.......##.##.##......',
  '[': '.###..#....#....#....#....#....###.',
  ']': '.###....#....#....#....#....#..###.',
  '!': '..#....#....#....#....#.........#..',
  '?': '.###.#...#....#...#...#.........#..',
  '·': '.................#.................',
  '#': '.#.#..#.#.#####.#.#.#####.#.#..#.#.',
};

const hex = (s) => [parseInt(s.slice(1, 3), 16), parseInt(s.slice(3, 5), 16), parseInt(s.slice(5, 7), 16)];

export class Canvas {
  constructor(width, height, background = '#ffffff') {
    this.width = width;
    this.height = height;
    this.px = Buffer.alloc(width * height * 3);
    this.rect(0, 0, width, height, background);
  }

  rect(x, y, w, h, color) {
    const [r, g, b] = hex(color);
    const x0 = Math.max(0, Math.round(x));
    const y0 = Math.max(0, Math.round(y));
    const x1 = Math.min(this.width, Math.round(x + w));
    const y1 = Math.min(this.height, Math.round(y + h));
    for (let yy = y0; yy < y1; yy++) {
      for (let xx = x0; xx < x1; xx++) {
        const i = (yy * this.width + xx) * 3;
        this.px[i] = r;
        this.px[i + 1] = g;
        this.px[i + 2] = b;
      }
    }
  }

  /** Draws text with its top-left at (x, y); `scale` pixels per font dot. Returns the width. */
  text(x, y, str, color = '#222222', scale = 2) {
    let cx = x;
    for (const ch of String(str)) {
      const glyph = GLYPHS[ch] ?? GLYPHS[ch.toUpperCase()] ?? GLYPHS['?'] ?? GLYPHS[' '];
      for (let row = 0; row < 7; row++) {
        for (let col = 0; col < 5; col++) {
          if (glyph[row * 5 + col] === '#') this.rect(cx + col * scale, y + row * scale, scale, scale, color);
        }
      }
      cx += 6 * scale;
    }
    return cx - x;
  }

  static textWidth(str, scale = 2) {
    return [...String(str)].length * 6 * scale;
  }

  toPNG() {
    const { width, height, px } = this;
    const raw = Buffer.alloc((width * 3 + 1) * height);
    for (let y = 0; y < height; y++) {
      raw[y * (width * 3 + 1)] = 0;
      px.copy(raw, y * (width * 3 + 1) + 1, y * width * 3, (y + 1) * width * 3);
    }
    const ihdr = Buffer.alloc(13);
    ihdr.writeUInt32BE(width, 0);
    ihdr.writeUInt32BE(height, 4);
    ihdr.set([8, 2, 0, 0, 0], 8);
    return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw, { level: 9 })), chunk('IEND', Buffer.alloc(0))]);
  }
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type, data) {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}

/**
 * Panels of horizontal bars. `panels`: [{ title, unit, rows: [{ label, value, color, mark?,
 * note? }] }]; `mark` draws a tick (e.g. a p99 beside a p50 bar), `note` is printed after the bar.
 */
export function barChartPNG({ title, subtitle, panels, width = 1000 }) {
  const S = 2;
  const lineH = 7 * S;
  const barH = 22;
  const rowGap = 8;
  const labelW = Math.max(...panels.flatMap((p) => p.rows.map((r) => Canvas.textWidth(r.label, S)))) + 24;
  const left = 20;
  const barX = left + labelW;
  const noteW = Math.max(...panels.flatMap((p) => p.rows.map((r) => Canvas.textWidth(r.note ?? '', S)))) + 16;
  const barMax = width - barX - noteW - 20;
  let height = 30 + lineH + (subtitle ? lineH + 10 : 0) + 20;
  for (const p of panels) height += lineH + 14 + p.rows.length * (barH + rowGap) + 26;
  const c = new Canvas(width, height);
  let y = 24;
  c.text(left, y, title, '#111111', S);
  y += lineH + 10;
  if (subtitle) {
    c.text(left, y, subtitle, '#666666', S);
    y += lineH + 10;
  }
  y += 10;
  for (const p of panels) {
    c.text(left, y, p.title, '#111111', S);
    y += lineH + 14;
    const max = Math.max(...p.rows.map((r) => Math.max(r.value, r.mark ?? 0))) || 1;
    const scale = barMax / max;
    // A light grid line at the panel's axis.
    c.rect(barX - 1, y - 4, 1, p.rows.length * (barH + rowGap), '#999999');
    for (const r of p.rows) {
      c.text(left, y + (barH - lineH) / 2, r.label, '#333333', S);
      c.rect(barX, y, Math.max(1, r.value * scale), barH, r.color);
      let end = barX + r.value * scale;
      if (r.mark !== undefined) {
        c.rect(barX + r.value * scale, y + barH / 2 - 1, Math.max(0, (r.mark - r.value) * scale), 2, r.color);
        c.rect(barX + r.mark * scale - 1, y + 3, 3, barH - 6, r.color);
        end = Math.max(end, barX + r.mark * scale);
      }
      if (r.note) c.text(end + 8, y + (barH - lineH) / 2, r.note, '#333333', S);
      y += barH + rowGap;
    }
    y += 26;
  }
  return c.toPNG();
}
