import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, join, relative, sep } from 'node:path';
import { gzipSync } from 'node:zlib';

/** One file of the inspector's build, held in memory with its gzip form. */
export interface UiAsset {
  body: Buffer;
  gzip: Buffer | null;
  type: string;
  etag: string;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
};

/** The build output of the `@agentq/ui` package (`packages/ui/dist`), or null when it cannot be found. */
export function uiDistDir(): string | null {
  try {
    return join(dirname(createRequire(import.meta.url).resolve('@agentq/ui/package.json')), 'dist');
  } catch {
    return null;
  }
}

/**
 * Every file of the inspector's build by its path under `/ui/` (`index.html`, `assets/…`), read once: the build
 * is a few small files, served from memory, gzipped once. Empty when the package is not built.
 */
export function loadUiAssets(dir: string | null): Map<string, UiAsset> {
  const out = new Map<string, UiAsset>();
  if (!dir || !existsSync(join(dir, 'index.html'))) return out;
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) walk(path);
      else {
        const body = readFileSync(path);
        const type = TYPES[extname(name)] ?? 'application/octet-stream';
        const compressible = /^(text\/|image\/svg|application\/json)/.test(type) && body.length > 512;
        out.set(relative(dir, path).split(sep).join('/'), {
          body,
          gzip: compressible ? gzipSync(body, { level: 9 }) : null,
          type,
          etag: `"${body.length.toString(36)}-${hash(body)}"`,
        });
      }
    }
  };
  walk(dir);
  return out;
}

// A short content hash for the ETag (FNV-1a: no need for a cryptographic one here).
function hash(b: Buffer): string {
  let h = 0x811c9dc5;
  for (const byte of b) h = Math.imul(h ^ byte, 0x01000193) >>> 0;
  return h.toString(36);
}
