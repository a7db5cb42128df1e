import { defineConfig } from 'vite';

// The inspector is served by the API under /ui from this package's dist/ (see services/api/src/routes/ui.ts):
// hashed assets, one HTML page, no inline script (the API's Content-Security-Policy allows none).
export default defineConfig({
  base: '/ui/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2022',
    // The module preload polyfill would be inlined into the page otherwise.
    modulePreload: { polyfill: false },
    reportCompressedSize: true,
    sourcemap: false,
  },
});
