import { Lexer, type Token, type Tokens } from 'marked';
import type { ComponentChildren } from 'preact';
import { useMemo } from 'preact/hooks';
import { safeHref } from '../lib/safe-href.js';

// Markdown as elements, never as HTML text: marked only tokenizes, and each token becomes a Preact element whose
// text Preact sets as text. HTML in a model's answer or a tool's output is shown as the characters it is; a link
// opens only http(s) and mailto addresses; an image is shown as a link (the page loads nothing from elsewhere).

/** Past this many characters the text is shown as it is, not parsed. */
const MAX_MARKDOWN_CHARS = 200_000;

const ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'" };
const decode = (s: string) => s.replace(/&(amp|lt|gt|quot|#39);/g, (m) => ENTITIES[m] ?? m);

function inline(tokens: Token[] | undefined, key = ''): ComponentChildren[] {
  return (tokens ?? []).map((t, i) => inlineToken(t, `${key}${i}`));
}

function inlineToken(t: Token, key: string): ComponentChildren {
  switch (t.type) {
    case 'text': {
      const x = t as Tokens.Text;
      return x.tokens?.length ? <span key={key}>{inline(x.tokens, key)}</span> : decode(x.text);
    }
    case 'escape':
      return (t as Tokens.Escape).text;
    case 'strong':
      return <strong key={key}>{inline((t as Tokens.Strong).tokens, key)}</strong>;
    case 'em':
      return <em key={key}>{inline((t as Tokens.Em).tokens, key)}</em>;
    case 'del':
      return <del key={key}>{inline((t as Tokens.Del).tokens, key)}</del>;
    case 'codespan':
      return <code key={key}>{(t as Tokens.Codespan).text}</code>;
    case 'br':
      return <br key={key} />;
    case 'link': {
      const l = t as Tokens.Link;
      const href = safeHref(l.href);
      const text = inline(l.tokens, key);
      return href ? (
        <a key={key} href={href} target="_blank" rel="noopener noreferrer nofollow">
          {text}
        </a>
      ) : (
        <span key={key}>{text}</span>
      );
    }
    case 'image': {
      const im = t as Tokens.Image;
      const href = safeHref(im.href);
      const label = `[image${im.text ? `: ${im.text}` : ''}]`;
      return href ? (
        <a key={key} href={href} target="_blank" rel="noopener noreferrer nofollow">
          {label}
        </a>
      ) : (
        label
      );
    }
    case 'checkbox':
      return (t as Tokens.Checkbox).checked ? '☑ ' : '☐ ';
    default:
      // html (shown as its text) and anything else: the characters as written.
      return (t as { text?: string }).text ?? t.raw;
  }
}

function block(t: Token, key: string): ComponentChildren {
  switch (t.type) {
    case 'space':
    case 'def':
      return null;
    case 'heading': {
      const h = t as Tokens.Heading;
      const Tag = `h${Math.min(6, Math.max(3, h.depth + 2))}` as 'h3';
      return <Tag key={key}>{inline(h.tokens, key)}</Tag>;
    }
    case 'paragraph':
      return <p key={key}>{inline((t as Tokens.Paragraph).tokens, key)}</p>;
    case 'text': {
      const x = t as Tokens.Text;
      return <p key={key}>{x.tokens ? inline(x.tokens, key) : decode(x.text)}</p>;
    }
    case 'code':
      return (
        <pre key={key} class="code">
          <code>{(t as Tokens.Code).text}</code>
        </pre>
      );
    case 'blockquote':
      return <blockquote key={key}>{blocks((t as Tokens.Blockquote).tokens, key)}</blockquote>;
    case 'hr':
      return <hr key={key} />;
    case 'list': {
      const l = t as Tokens.List;
      const items = l.items.map((item, i) => (
        <li key={`${key}-${i}`}>
          {item.tokens.map((c, j) =>
            c.type === 'text' && !item.loose ? inlineToken(c, `${key}-${i}-${j}`) : block(c, `${key}-${i}-${j}`),
          )}
        </li>
      ));
      return l.ordered ? (
        <ol key={key} start={typeof l.start === 'number' ? l.start : undefined}>
          {items}
        </ol>
      ) : (
        <ul key={key}>{items}</ul>
      );
    }
    case 'table': {
      const tb = t as Tokens.Table;
      return (
        <div key={key} class="table-wrap">
          <table>
            <thead>
              <tr>
                {tb.header.map((c, i) => (
                  <th key={i}>{inline(c.tokens, `${key}h${i}`)}</th>
                ))}
              </tr>
            </thead>
            <tbody>
              {tb.rows.map((row, r) => (
                <tr key={r}>
                  {row.map((c, i) => (
                    <td key={i}>{inline(c.tokens, `${key}r${r}c${i}`)}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      );
    }
    case 'html':
      return (
        <pre key={key} class="html-as-text">
          {(t as Tokens.HTML).text}
        </pre>
      );
    default:
      return <p key={key}>{t.raw}</p>;
  }
}

function blocks(tokens: Token[], key: string): ComponentChildren[] {
  return tokens.map((t, i) => block(t, `${key}.${i}`));
}

/** A markdown text rendered as elements (see above); a text too large to parse is shown as it is. */
export function Markdown({ text }: { text: string }) {
  const out = useMemo(() => {
    if (text.length > MAX_MARKDOWN_CHARS) return <pre class="plain">{text}</pre>;
    try {
      return blocks(Lexer.lex(text, { gfm: true }), 'm');
    } catch {
      return <pre class="plain">{text}</pre>;
    }
  }, [text]);
  return <div class="md">{out}</div>;
}
