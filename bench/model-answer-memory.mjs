// What large model answers cost an agent-worker in memory: the built api and agent-worker (under
// the shipped heap flags) on a scripted model that answers every run with `mb` MB of text, to
// `runs` runs at once, streamed as 10 KB deltas or as one delta. Prints the worker's peak RSS
// (VmHWM) before the runs and after them, whether it stayed up, and how the runs ended.
//
//   npm run build && node bench/model-answer-memory.mjs [<mb>x<runs><deltas|whole> ...]
//   e.g. node bench/model-answer-memory.mjs 20x1deltas 20x1whole 20x6deltas 60x1deltas
// Env: BENCH_NODE_OPTIONS (added to the services' NODE_OPTIONS, e.g. a preloaded sampler).
import { Redis } from 'ioredis';
import { runKeys } from '@agentq/shared/store';
import { startScriptedLlm } from '@agentq/scripted-llm';
import { memMB, sleep, spawnProc, stopProc, until } from './lib/procs.mjs';
import { startRedis } from './lib/redis-server.mjs';
import { freePort, HEAP_FLAGS, serviceEntry } from '../scripts/lib/services.mjs';

const KB = 1024;
const MB = 1024 * KB;
const scenarios = (process.argv.slice(2).length ? process.argv.slice(2) : ['20x1deltas', '20x6deltas']).map((s) => {
  const m = /^(\d+)x(\d+)(deltas|whole)$/.exec(s);
  if (!m) throw new Error(`"${s}" is not <mb>x<runs>deltas or <mb>x<runs>whole`);
  return { name: s, mb: Number(m[1]), runs: Number(m[2]), form: m[3] };
});

/** The answer's chunks: `mb` MB of text in 10 KB deltas, or in one. */
function answer(mb, form) {
  const meta = { id: 'chatcmpl-big', object: 'chat.completion.chunk', created: 0, model: 'bench' };
  const piece = form === 'deltas' ? 10 * KB : mb * MB;
  const text = 'abcdefghi '.repeat(piece / 10);
  const chunks = [{ ...meta, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] }];
  for (let sent = 0; sent < mb * MB; sent += piece)
    chunks.push({ ...meta, choices: [{ index: 0, delta: { content: text }, finish_reason: null }] });
  chunks.push({ ...meta, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
  return chunks;
}

const redis = await startRedis();
const ctl = new Redis(redis.url);
const llm = await startScriptedLlm({
  handler: (req) => {
    const [mb, form] = String(req.messages.find((m) => m.role === 'user').content).split(' ');
    return { rawChunks: answer(Number(mb), form) };
  },
});
const results = [];
try {
  for (const s of scenarios) {
    const prefix = `mem${Date.now().toString(36)}`;
    const port = await freePort();
    const env = {
      PATH: process.env.PATH,
      REDIS_URL: redis.url,
      QUEUE_PREFIX: prefix,
      PORT: String(port),
      HOST: '127.0.0.1',
      OPENAI_BASE_URL: llm.baseURL,
      OPENAI_API_KEY: 'bench',
      MODEL: 'bench',
      LOG_LEVEL: 'info',
      NODE_OPTIONS: [HEAP_FLAGS, process.env.BENCH_NODE_OPTIONS ?? ''].join(' ').trim(),
    };
    const api = spawnProc('api', process.execPath, [serviceEntry('api')], { env });
    let ready = false;
    const agent = spawnProc('agent-worker', process.execPath, [serviceEntry('agent-worker')], {
      env,
      onLine: (line) => (ready ||= line.includes('worker started')),
    });
    const apiUrl = `http://127.0.0.1:${port}`;
    await until('the api', async () => (await fetch(`${apiUrl}/readyz`)).ok, 30_000, 100);
    await until('the agent-worker', () => ready, 30_000, 20);
    const idle = memMB(agent.pid).peak;
    const ids = [];
    for (let i = 0; i < s.runs; i++) {
      const r = await fetch(`${apiUrl}/v1/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ input: `${s.mb} ${s.form} ${i}` }),
      });
      ids.push((await r.json()).id);
    }
    let peak = idle;
    let statuses = [];
    const started = Date.now();
    while (Date.now() - started < 120_000) {
      // A process that has died (a zombie until reaped) shows no VmHWM: the last reading stands.
      const mem = memMB(agent.pid);
      if (Number.isFinite(mem?.peak)) peak = Math.max(peak, mem.peak);
      if (!agent.running) break;
      // From the run's hash: the API's run object would carry each 20 MB answer.
      statuses = await Promise.all(ids.map((id) => ctl.hget(runKeys(prefix, id).run, 'status')));
      if (statuses.every((st) => !['queued', 'running'].includes(st))) break;
      await sleep(20);
    }
    const row = {
      scenario: s.name,
      idle_peak_rss_mb: Math.round(idle),
      peak_rss_mb: Math.round(peak),
      worker: agent.running ? 'up' : 'died',
      runs: statuses.join(','),
      seconds: ((Date.now() - started) / 1000).toFixed(1),
    };
    results.push(row);
    console.log(JSON.stringify(row));
    if (!agent.running) agent.stopping = true;
    await Promise.all([stopProc(agent, 2000), stopProc(api, 2000)]);
    const keys = await ctl.keys(`${prefix}*`);
    for (let i = 0; i < keys.length; i += 500) await ctl.del(...keys.slice(i, i + 500));
  }
} finally {
  await llm.close();
  ctl.disconnect();
  await redis.stop();
}
console.table(results);
