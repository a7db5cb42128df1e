import { Hono } from 'hono';
import {
  buildOpenApiDocument,
  type OpenApiDocument,
  type OpenApiOperation,
  type OpenApiResponse,
  type OpenApiSchema,
} from '../openapi.js';

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

const esc = (s: unknown) => String(s ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
// Inline `code` spans of the descriptions, after escaping.
const prose = (s: unknown) => esc(s).replace(/`([^`]+)`/g, '<code>$1</code>');
const anchor = (s: string) => s.replace(/[^A-Za-z0-9_-]+/g, '-');

/** A link to a schema of the page; `text` is HTML already. */
const schemaLink = (id: string, text: string) => `<a href="#schema-${id}">${text}</a>`;
/** A table row of cells that are HTML already (`th` for a head row). */
const tableRow = (cells: string[], tag = 'td') => `<tr>${cells.map((c) => `<${tag}>${c}</${tag}>`).join('')}</tr>`;

/** A schema as pretty JSON, with `$ref`s turned into links to the component. */
function schemaBlock(schema: unknown): string {
  const text = esc(JSON.stringify(schema, null, 2));
  const refs = /&#34;#\/components\/schemas\/([A-Za-z0-9_]+)&#34;/g;
  return `<pre>${text.replace(refs, (_, id) => `&#34;${schemaLink(id, `#/components/schemas/${id}`)}&#34;`)}</pre>`;
}

function refName(schema: OpenApiSchema | undefined): string | null {
  const r = schema?.$ref;
  return r ? r.split('/').pop()! : null;
}

function operationHtml(doc: OpenApiDocument, path: string, method: string, op: OpenApiOperation): string {
  const id = anchor(`${method}-${path}`);
  const open = Array.isArray(op.security) && op.security.length === 0;
  const params = op.parameters ?? [];
  const rows = params
    .map((p) =>
      tableRow([
        `<code>${esc(p.name)}</code>`,
        esc(p.in),
        p.required ? 'yes' : '',
        prose(p.description),
        `<code>${esc(JSON.stringify(p.schema))}</code>`,
      ]),
    )
    .join('');
  const body = op.requestBody?.content
    ? Object.entries(op.requestBody.content)
        .map(([type, media]) => {
          const name = refName(media.schema);
          const schema = name ? `<p>${schemaLink(name, esc(name))}</p>` : schemaBlock(media.schema);
          return `<h4>Request body <code>${esc(type)}</code></h4>${schema}`;
        })
        .join('')
    : '';
  const responses = Object.entries(op.responses ?? {})
    .map(([status, r]) => {
      const res: OpenApiResponse = r.$ref ? doc.components.responses[refName(r)!] : r;
      const media = Object.entries(res.content ?? {})
        .map(([type, m]) => {
          const name = refName(m.schema) ?? refName(m['x-itemSchema']);
          return `<code>${esc(type)}</code>${name ? ` ${schemaLink(name, esc(name))}` : ''}`;
        })
        .join(', ');
      return tableRow([`<code>${esc(status)}</code>`, prose(res.description), media]);
    })
    .join('');
  const title = `<span class="method ${method}">${method.toUpperCase()}</span> <code>${esc(path)}</code>`;
  const noKey = open ? ' <span class="open">no key</span>' : '';
  const paramsHead = tableRow(['name', 'in', 'required', 'description', 'schema'], 'th');
  return `<section class="op" id="${id}">
<h3>${title} ${esc(op.summary)}${noKey}</h3>
${op.description ? `<p>${prose(op.description)}</p>` : ''}
${rows ? `<h4>Parameters</h4><table>${paramsHead}${rows}</table>` : ''}
${body}
<h4>Responses</h4><table>${tableRow(['status', 'description', 'content'], 'th')}${responses}</table>
</section>`;
}

/** The reference page: every operation, webhook and schema of the document, with no script. */
export function renderDocsPage(doc: OpenApiDocument): string {
  const ops: { tag: string; html: string; path: string; method: string; summary: string }[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const m of METHODS) {
      const op = item[m];
      if (op)
        ops.push({
          tag: op.tags?.[0] ?? 'other',
          html: operationHtml(doc, path, m, op),
          path,
          method: m,
          summary: op.summary ?? '',
        });
    }
  }
  const tags = doc.tags.map((t) => t.name);
  const byTag = tags.map(
    (t) =>
      `<h2 id="tag-${anchor(t)}">${esc(t)}</h2><p>${prose(doc.tags.find((x) => x.name === t)?.description)}</p>${ops
        .filter((o) => o.tag === t)
        .map((o) => o.html)
        .join('\n')}`,
  );
  const hooks = Object.entries(doc.webhooks ?? {}).flatMap(([name, item]) =>
    item.post ? [operationHtml(doc, name, 'post', item.post)] : [],
  );
  const schemas = Object.entries(doc.components.schemas).map(([id, s]) => {
    const about = s.description ? `<p>${prose(s.description)}</p>` : '';
    return `<section class="schema" id="schema-${id}"><h3>${esc(id)}</h3>${about}${schemaBlock(s)}</section>`;
  });
  const toc = ops
    .map((o) => {
      const title = `<span class="method ${o.method}">${o.method.toUpperCase()}</span> ${esc(o.path)}`;
      return `<li><a href="#${anchor(`${o.method}-${o.path}`)}">${title}</a></li>`;
    })
    .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(doc.info.title)} API reference</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;margin:0;display:flex;color:#1d1d1f}
nav{width:300px;flex:none;height:100vh;position:sticky;top:0;overflow:auto;background:#f5f5f7;padding:1rem;
box-sizing:border-box;font-size:13px}
nav ul{list-style:none;padding:0}nav li{margin:.2rem 0}nav a{color:inherit;text-decoration:none}
main{padding:1rem 2rem;max-width:1000px;min-width:0}
code,pre{font:13px ui-monospace,monospace}pre{background:#f5f5f7;padding:.75rem;overflow:auto;max-height:30rem}
table{border-collapse:collapse;width:100%;margin:.5rem 0}
td,th{border:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}
.op,.schema{border-top:1px solid #ddd;padding:.5rem 0}
.method{display:inline-block;min-width:3.5em;text-align:center;border-radius:4px;color:#fff;font-size:12px;
padding:0 .3em}
.get{background:#2b7de9}.post{background:#1a9e4b}.put,.patch{background:#c77c02}.delete{background:#c0392b}
.open{font-size:12px;color:#666;border:1px solid #aaa;border-radius:4px;padding:0 .3em}
</style></head>
<body><nav><strong>${esc(doc.info.title)} ${esc(doc.info.version)}</strong>
<p><a href="/openapi.json">openapi.json</a></p>
<ul>${toc}</ul><p><a href="#webhooks">Webhooks</a> · <a href="#schemas">Schemas</a></p></nav>
<main><h1>${esc(doc.info.title)} API reference</h1><p>${prose(doc.info.summary)}</p>
<p>${prose(doc.info.description)}</p>
${byTag.join('\n')}
<h2 id="webhooks">Webhooks</h2>${hooks.join('\n')}
<h2 id="schemas">Schemas</h2>${schemas.join('\n')}
</main></body></html>`;
}

/** `GET /openapi.json` and `GET /docs`: the contract, machine- and human-readable; no key needed. */
export function docsRoutes() {
  const doc = buildOpenApiDocument();
  const page = renderDocsPage(doc);
  const app = new Hono();
  app.get('/openapi.json', (c) => c.json(doc));
  app.get('/docs', (c) => c.html(page));
  return app;
}
