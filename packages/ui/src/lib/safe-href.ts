/** The address a link in a model's text or a tool's output may open (http, https, mailto), or null. */
export function safeHref(href: string): string | null {
  try {
    const u = new URL(href.trim(), 'https://invalid.example/');
    // A relative address would point into this server: nothing a model's text should link to.
    if (u.origin === 'https://invalid.example') return null;
    return ['http:', 'https:', 'mailto:'].includes(u.protocol) ? u.href : null;
  } catch {
    return null;
  }
}
