import { linePrompter } from './action-prompt.js';
import { CliConfigError, loadCliConfig, type CliConfig } from './cli-config.js';
import { EXIT, main } from './cli-main.js';

// The entry point: the process's environment, arguments and streams go in here and nowhere else.
let config: CliConfig | undefined;
try {
  config = loadCliConfig();
} catch (err) {
  if (!(err instanceof CliConfigError)) throw err;
  for (const p of err.problems) process.stderr.write(`agentq: ${p}\n`);
  process.exitCode = EXIT.usage;
}
if (config) {
  process.exitCode = await main(process.argv.slice(2), config, {
    stdout: process.stdout,
    stderr: process.stderr,
    onInterrupt(handler) {
      process.on('SIGINT', handler);
      return () => process.off('SIGINT', handler);
    },
    // Asked only when a person can see the question and type the answer.
    openPrompter: () =>
      process.stdin.isTTY && process.stderr.isTTY
        ? linePrompter(process.stdin, process.stderr, {
            terminal: true,
            onInterrupt: () => process.kill(process.pid, 'SIGINT'),
          })
        : null,
  });
}
