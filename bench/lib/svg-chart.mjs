// @ts-check
// A horizontal bar chart as SVG text: fonts by name, no scripts, no external resources.

/**
 * @typedef {{ label: string, value: number, color: string, mark?: number, note?: string }} Bar
 * @typedef {{ title: string, rows: Bar[] }} Panel
 */

const esc = (/** @type {unknown} */ s) =>
  String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const px = (/** @type {number} */ v) => Math.round(v * 10) / 10;
/** Width of a character at 12 px, generous for a sans-serif, to lay out columns without measuring text. */
const CHAR = 6.8;

/**
 * Panels of horizontal bars, one scale per panel. `panels`: [{ title, rows: [{ label, value,
 * color, mark?, note? }] }]; `mark` draws a tick (e.g. a p99 beside a p50 bar), `note` is
 * written after the bar.
 * @param {{ title: string, subtitle?: string, panels: Panel[], width?: number }} chart
 */
export function barChartSVG({ title, subtitle, panels, width = 760 }) {
  const rows = panels.flatMap((p) => p.rows);
  const [barH, gap, left] = [16, 6, 12];
  const barX = left + Math.ceil(Math.max(...rows.map((r) => r.label.length)) * CHAR) + 10;
  const barMax = width - barX - Math.ceil(Math.max(0, ...rows.map((r) => (r.note ?? '').length)) * CHAR) - 16;
  const out = [`<text x="${left}" y="20" font-size="15" font-weight="bold">${esc(title)}</text>`];
  let y = 20;
  if (subtitle) {
    y += 18;
    out.push(`<text x="${left}" y="${y}" fill="#555">${esc(subtitle)}</text>`);
  }
  y += 14;
  for (const p of panels) {
    const scale = barMax / (Math.max(...p.rows.map((r) => Math.max(r.value, r.mark ?? 0))) || 1);
    y += 18;
    out.push(`<g class="panel">`, `<text x="${left}" y="${y}" font-weight="bold">${esc(p.title)}</text>`);
    y += 8;
    out.push(
      `<line x1="${barX - 0.5}" y1="${y - 2}" x2="${barX - 0.5}" y2="${y + p.rows.length * (barH + gap)}" stroke="#999"/>`,
    );
    for (const r of p.rows) {
      const end = barX + Math.max(r.value, r.mark ?? 0) * scale;
      const mid = y + barH / 2;
      out.push(`<text x="${left}" y="${mid + 4}" fill="#333">${esc(r.label)}</text>`);
      out.push(
        `<rect class="bar" x="${barX}" y="${y}" width="${px(r.value * scale)}" height="${barH}" fill="${r.color}"><title>${esc(`${r.label}: ${r.note ?? r.value}`)}</title></rect>`,
      );
      if (r.mark !== undefined) {
        const mx = px(barX + r.mark * scale);
        out.push(
          `<path class="mark" d="M${px(barX + r.value * scale)} ${mid}H${mx}M${mx} ${y + 3}V${y + barH - 3}" stroke="${r.color}" stroke-width="2" fill="none"/>`,
        );
      }
      if (r.note) out.push(`<text x="${px(end + 6)}" y="${mid + 4}" fill="#333">${esc(r.note)}</text>`);
      y += barH + gap;
    }
    out.push('</g>');
    y += 10;
  }
  const height = y + 6;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    ...out,
    '</svg>',
    '',
  ].join('\n');
}
