/**
 * Caps a tool's output before it reaches Redis and the prompt; the marker tells the model
 * (and a reader of /steps) that the text was cut, and by how much.
 */
export function capToolOutput(text: string, maxBytes: number): string {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes <= maxBytes) return text;
  // Cut on a character boundary: decode the first maxBytes and drop a broken last character.
  const head = Buffer.from(text, 'utf8')
    .subarray(0, maxBytes)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
  return `${head}\n[output truncated: ${bytes} bytes, showing the first ${Buffer.byteLength(head, 'utf8')}]`;
}
