/** Split text into word-sized pieces (long words cut at 16 characters) that concatenate back exactly. */
export function splitWords(text: string): string[] {
  return text.match(/\S{1,16}\s*|\s+/g) ?? [];
}

/** Split a tool call's arguments into at least three pieces when long enough, at most 16 characters each. */
export function splitArguments(args: string): string[] {
  // Several pieces even for short arguments, so clients are always exercised on reassembly.
  const size = Math.max(1, Math.min(16, Math.ceil(args.length / 3)));
  const pieces: string[] = [];
  for (let i = 0; i < args.length; i += size) pieces.push(args.slice(i, i + size));
  return pieces;
}
