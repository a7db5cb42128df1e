#!/usr/bin/env node
// The `agentq` command. A committed file rather than dist/cli.js itself: npm links a bin at
// install time only if its file exists, and `npm ci` runs before `npm run build`.
try {
  await import('../dist/cli.js');
} catch (err) {
  if (err?.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('dist/cli.js')) {
    console.error('agentq: the client is not built yet: run `npm run build` in the repository');
    process.exit(1);
  }
  throw err;
}
