import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (p: string) => fileURLToPath(new URL(p, import.meta.url));

export default defineConfig({
  resolve: {
    // Tests run against the TypeScript sources; `npm run build` is only needed for the
    // tests and demo that start the built services as processes.
    alias: [
      // The shared package is imported by part: `@agentq/shared/<part>` is its `src/<part>/index.ts`.
      {
        find: /^@agentq\/shared\/(core|infra|store|jobs|runs)$/,
        replacement: src('./packages/shared/src/$1/index.ts'),
      },
      { find: '@agentq/scripted-llm', replacement: src('./packages/scripted-llm/src/index.ts') },
      { find: '@agentq/client', replacement: src('./packages/client/src/index.ts') },
      { find: '@agentq/api', replacement: src('./services/api/src/index.ts') },
      { find: '@agentq/agent-worker', replacement: src('./services/agent-worker/src/index.ts') },
      { find: '@agentq/tool-worker', replacement: src('./services/tool-worker/src/index.ts') },
    ],
  },
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Where a test file lives says what it may use:
    // - unit: `packages/*/src/**/*.test.ts`, `services/*/src/**/*.test.ts`, beside the code:
    //   no Redis, no child process (`npm run test:unit` runs them on a machine with neither).
    // - integration: `test/*.test.ts`: the services in-process on a real Redis, real MCP
    //   servers, a real browser.
    // - process: `test/process/*.test.ts`: tests that start and kill processes of their own:
    //   the built services (`npm run build` first) or a Redis server.
    // - cluster: the core of the loop's end-to-end tests again, on a local Redis Cluster of three
    //   masters (test/global-setup-cluster.ts), the store's sub-run writes (a Cluster's own path), crash
    //   recovery with the built services killed on it, and `test/cluster/*.test.ts` (cells, failover,
    //   Sentinel), which start the topologies they need.
    // Only integration, process and cluster get a Redis (`inject('redisUrl')`).
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['packages/*/src/**/*.test.ts', 'services/*/src/**/*.test.ts'] },
      },
      {
        extends: true,
        test: { name: 'integration', include: ['test/*.test.ts'], globalSetup: ['./test/global-setup.ts'] },
      },
      {
        extends: true,
        test: { name: 'process', include: ['test/process/*.test.ts'], globalSetup: ['./test/global-setup.ts'] },
      },
      {
        extends: true,
        test: {
          name: 'cluster',
          include: [
            'test/agent-loop.test.ts',
            'test/subagents.test.ts',
            'test/run-lifecycle.test.ts',
            'test/events.test.ts',
            'test/tree-cancel.test.ts',
            'test/runs-that-wait.test.ts',
            'test/sub-run-writes.test.ts',
            'test/process/crash-recovery.test.ts',
            'test/cluster/*.test.ts',
          ],
          globalSetup: ['./test/global-setup-cluster.ts'],
        },
      },
    ],
  },
});
