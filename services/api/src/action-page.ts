import { createHash } from 'node:crypto';
import type { ActionDecision, ActionRecord } from '@agentq/shared/runs';
import { MAX_JSON_DEPTH, nestedDeeperThan } from './validation.js';

// The pages a signed link shows: one request for an answer and the forms that answer it. Every
// piece of text in them (tool names, arguments, questions, choices) comes from a model or a user:
// all of it is escaped, and the page runs no script and loads nothing.

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
main{max-width:46rem;margin:2rem auto;padding:1.5rem;background:#fff;border:1px solid #dde1e7;border-radius:8px}
h1{font-size:1.35rem;margin:0 0 .5rem}h2{font-size:1rem;margin:1.25rem 0 .35rem}
pre,textarea{font:13px/1.45 ui-monospace,monospace;width:100%;box-sizing:border-box}
pre{background:#f1f3f6;padding:.75rem;border-radius:6px;overflow:auto;max-height:28rem;
white-space:pre-wrap;word-break:break-word}
textarea{min-height:5rem;padding:.5rem}form{margin:1rem 0}label{display:block;margin:.25rem 0}
button{font:inherit;padding:.45rem 1rem;margin:.35rem .35rem 0 0;border-radius:6px;border:1px solid #8a94a6;
background:#fff;cursor:pointer}
button.primary{background:#1f6feb;border-color:#1f6feb;color:#fff}button.danger{border-color:#c93c37;color:#c93c37}
.meta{color:#5b6474;font-size:.9rem}.question{font-size:1.1rem;white-space:pre-wrap}details{margin-top:1rem}`;

/**
 * The Content-Security-Policy of every page: nothing loads, nothing runs, the one style block is
 * allowed by its hash, forms post back to this origin only, and no other site may frame the page
 * (a framed page could trick a person into clicking Approve).
 */
export const ACTION_PAGE_CSP = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`,
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Text made safe for HTML content and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

/** Tool arguments as a person reads them: pretty-printed JSON, or as they came when they are not JSON. */
export function prettyArguments(raw: string): string {
  // A deeply nested value would make JSON.stringify recurse deep: show such text as it is.
  if (nestedDeeperThan(raw, MAX_JSON_DEPTH)) return raw;
  try {
    return JSON.stringify(JSON.parse(raw), null, 2);
  } catch {
    return raw;
  }
}

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="robots" content="noindex">
<title>${escapeHtml(title)} · agentq</title><style>${STYLE}</style></head>
<body><main>
${body}
</main></body></html>
`;
}

// A form without `action` posts to the page's own URL, token included, wherever the API is mounted.
// A newline after <pre> and <textarea> is dropped by the parser: the one added keeps the text's own.
const pre = (text: string) => `<pre>\n${escapeHtml(text)}</pre>`;
const textarea = (name: string, attrs: string, text = '') =>
  `<textarea id="${name}" name="${name}" ${attrs}>\n${escapeHtml(text)}</textarea>`;

function when(record: ActionRecord): string {
  const expiry = record.expires_at ? `answer before ${escapeHtml(record.expires_at)}` : 'no expiry';
  return `<p class="meta">Asked at ${escapeHtml(record.created_at)}; ${expiry}.</p>`;
}

function toolCall(record: ActionRecord): string {
  return `<h2>Tool</h2><p><code>${escapeHtml(record.name)}</code></p>
<h2>Arguments</h2>${pre(prettyArguments(record.arguments))}`;
}

/** The page of a request that waits: what it asks, and the forms that answer it. */
export function actionPage(record: ActionRecord): string {
  switch (record.type) {
    case 'approval':
      return page(
        `Approve ${record.name}?`,
        `<h1>An agent asks to run a tool</h1>${when(record)}${toolCall(record)}
<form method="post"><input type="hidden" name="approve" value="true">
<button type="submit" class="primary">Approve</button></form>
<form method="post"><input type="hidden" name="approve" value="false">
<label for="reason">Reason for rejecting (optional; the agent is told)</label>
${textarea('reason', 'maxlength="4000" rows="3"')}<button type="submit" class="danger">Reject</button></form>
<details><summary>Approve with edited arguments</summary>
<form method="post"><input type="hidden" name="approve" value="true">
<label for="arguments">Arguments (a JSON object; checked against the tool's input schema)</label>
${textarea('arguments', 'rows="12" required', prettyArguments(record.arguments))}
<button type="submit">Approve with these arguments</button></form></details>`,
      );
    case 'client_tool':
      return page(
        `Output of ${record.name}`,
        `<h1>An agent waits for the output of a tool</h1>${when(record)}${toolCall(record)}
<form method="post"><label for="output">Output (given to the agent as the tool's result)</label>
${textarea('output', 'rows="8" maxlength="1000000"')}
<button type="submit" class="primary">Send the output</button></form>`,
      );
    case 'input': {
      const choice = (c: string) =>
        `<button type="submit" name="answer" value="${escapeHtml(c)}">${escapeHtml(c)}</button>`;
      const choices = record.choices?.length
        ? `<form method="post"><h2>Choose</h2>${record.choices.map(choice).join('')}</form>`
        : '';
      const answerLabel = record.choices?.length ? 'Or answer in your own words' : 'Your answer';
      return page(
        'A question',
        `<h1>An agent asks you</h1>${when(record)}<p class="question">${escapeHtml(record.question ?? '')}</p>${choices}
<form method="post"><label for="answer">${answerLabel}</label>
${textarea('answer', 'rows="4" maxlength="1000000" required')}
<button type="submit" class="primary">Send the answer</button></form>`,
      );
    }
  }
}

const DONE: Record<ActionDecision['decision'], string> = {
  approved: 'Approved: the tool call runs now.',
  rejected: 'Rejected: the tool call will not run, and the agent is told.',
  answered: 'Answered: the agent goes on with it.',
  expired: 'This request expired before it was answered.',
  cancelled: 'This request was cancelled (its run ended).',
};

/** The page after a form's answer was stored. */
export function recordedPage(decision: ActionDecision): string {
  return page(
    'Recorded',
    `<h1>Recorded</h1><p>${escapeHtml(DONE[decision.decision])}</p><p class="meta">You can close this page.</p>`,
  );
}

/** A refusal as a page, for a person who followed a link (the message is ours, escaped all the same). */
export function errorPage(status: number, message: string): string {
  const refusedAnswer = status === 400 || status === 413 || status === 415;
  const title = refusedAnswer
    ? 'This answer was not taken'
    : status === 410
      ? 'This link no longer works'
      : 'This link is not valid';
  // A refused answer can be given again: an empty href is this very link, which GET shows.
  const back = refusedAnswer ? '<p><a href="">Back to the request</a></p>' : '';
  return page(title, `<h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p>${back}`);
}
