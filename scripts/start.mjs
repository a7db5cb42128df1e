#!/usr/bin/env node
// `npm start`: runs the api, the agent-worker and the tool-worker (built by `npm run build`) as
// child processes with the current environment. Output lines are prefixed with the service name.
// SIGINT/SIGTERM are forwarded to all three; we exit once all have exited. If one dies on its
// own, the others are stopped and we exit nonzero.
import {
  describeExit,
  linePrefix,
  missingBuilds,
  SERVICES,
  startService,
  stopServices,
  signalService,
  killServiceGroup,
} from './lib/services.mjs';

const missing = missingBuilds();
if (missing.length) {
  process.stderr.write(`start: ${missing.join(', ')} not found: run npm run build first\n`);
  process.exit(1);
}

const log = (msg) => process.stderr.write(`${linePrefix('start', process.stderr.isTTY)}${msg}\n`);

let stopping = null; // the signal we are stopping on, or 'failure'
let firstSignalAt = 0;
let exitCode = 0;

const services = SERVICES.map((name) => {
  const prefix = linePrefix(name);
  const prefixErr = linePrefix(name, process.stderr.isTTY);
  return startService(name, {
    env: process.env,
    onLine: (line, stream) =>
      (stream === 'stderr' ? process.stderr : process.stdout).write(
        `${stream === 'stderr' ? prefixErr : prefix}${line}\n`,
      ),
  });
});

for (const svc of services) {
  svc.exited.then((how) => {
    if (stopping) {
      if (how.code !== 0 && how.code !== null && stopping !== 'failure') exitCode ||= how.code;
      return;
    }
    // A service died on its own: stop the others and fail.
    log(`${svc.name} ${describeExit(how)} unexpectedly; stopping the others`);
    stopping = 'failure';
    exitCode = how.code || 1;
    void stopServices(
      services.filter((s) => s.running),
      { signal: 'SIGTERM' },
    );
  });
}

function onSignal(signal) {
  if (stopping && stopping !== 'failure') {
    // The same Ctrl-C can arrive twice (from the terminal and forwarded by npm): ignore echoes.
    if (Date.now() - firstSignalAt < 1000) return;
    // A real second signal: the services treat it as "exit now".
    log(`${signal} again: stopping now`);
    for (const svc of services) signalService(svc, signal);
    return;
  }
  if (!stopping)
    log(
      `${signal}: stopping ${services
        .filter((s) => s.running)
        .map((s) => s.name)
        .join(', ')}`,
    );
  stopping ??= signal;
  firstSignalAt ||= Date.now();
  for (const svc of services) signalService(svc, signal);
}
process.on('SIGINT', () => onSignal('SIGINT'));
process.on('SIGTERM', () => onSignal('SIGTERM'));
process.on('SIGHUP', () => onSignal('SIGTERM'));
// Never leave a service behind if we go down some other way.
process.on('exit', () => {
  for (const svc of services) if (svc.running) killServiceGroup(svc);
});

await Promise.all(services.map((s) => s.exited));
if (stopping === 'failure') log(`stopped (exit ${exitCode})`);
else log('all services stopped');
process.exit(exitCode);
