import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (p: string) => fileURLToPath(new URL(p, import.meta.url));

export default defineConfig({
  resolve: {
    // Tests run against the TypeScript sources; `npm run build` is only needed for the
    // tests and demo that start the built services as processes.
    alias: {
      '@agentq/shared': src('./packages/shared/src/index.ts'),
      '@agentq/scripted-llm': src('./packages/scripted-llm/src/index.ts'),
      '@agentq/client': src('./packages/client/src/index.ts'),
      '@agentq/api': src('./services/api/src/index.ts'),
      '@agentq/agent-worker': src('./services/agent-worker/src/index.ts'),
      '@agentq/tool-worker': src('./services/tool-worker/src/index.ts'),
    },
  },
  test: {
    include: ['packages/*/src/**/*.test.ts', 'services/*/src/**/*.test.ts', 'test/**/*.test.ts'],
    globalSetup: ['./test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
