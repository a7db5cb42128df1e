// @ts-check
// The floor under the API's requests on this machine: a bare node:http server that answers a GET
// with a small JSON object (200) and a POST by reading its JSON body, parsing it and answering
// 202, keeping connections alive as the API does. No framework, no validation, no Redis. Prints
// {"url": …} once it listens on loopback.
import http from 'node:http';

const server = http.createServer((req, res) => {
  if (req.method === 'GET') {
    const body = JSON.stringify({
      id: req.url?.split('/').pop(),
      object: 'run',
      status: 'queued',
      created_at: new Date().toISOString(),
    });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
    return;
  }
  /** @type {Buffer[]} */
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let input;
    try {
      input = JSON.parse(Buffer.concat(chunks).toString('utf8')).input;
    } catch {
      res.writeHead(400).end();
      return;
    }
    const body = JSON.stringify({
      id: `run_${Date.now().toString(36)}`,
      status: 'queued',
      input: typeof input === 'string' ? input.length : 0,
    });
    res
      .writeHead(202, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        location: '/v1/runs/x',
      })
      .end(body);
  });
});
server.keepAliveTimeout = 5_000;
server.listen(0, '127.0.0.1', () => {
  const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}` })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
