// The scripted model of `npm run demo`: an agent that looks a person up in the MCP memory
// server's knowledge graph, replaces their company, checks the record and reports what the
// tools actually returned. Each reply is decided from the request's transcript alone, as a
// real model's would be, so it works whichever worker or retry sends the request.

const parseJson = (text) => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};
const textOf = (content) =>
  typeof content === 'string' ? content : Array.isArray(content) ? content.map((p) => p?.text ?? '').join('') : '';
const quote = (list) => list.map((o) => `"${o}"`).join(', ');

/** The tool calls made so far, in order, each with its arguments and result text. */
function toolHistory(messages) {
  const results = new Map(messages.filter((m) => m?.role === 'tool').map((m) => [m.tool_call_id, textOf(m.content)]));
  return messages
    .filter((m) => m?.role === 'assistant')
    .flatMap((m) => m.tool_calls ?? [])
    .map((tc) => ({
      name: tc.function?.name,
      args: parseJson(tc.function?.arguments ?? ''),
      result: results.get(tc.id) ?? '',
    }));
}

/** The scripted-llm handler: the next reply to a chat-completions request. */
export function demoAgent(req) {
  const ask = textOf(req.messages.find((m) => m?.role === 'user')?.content);
  const person = /\bfind\s+([\p{L}\w.-]+)/iu.exec(ask)?.[1] ?? 'Bob';
  const newFact = `works at ${/\bcompany to\s+(.+?)[.!]?\s*$/i.exec(ask)?.[1] ?? 'EPAM'}`;
  const calls = toolHistory(req.messages);
  const last = calls.at(-1);
  const use = (tool, args, content) => ({ content, tool_calls: [{ name: `memory__${tool}`, arguments: args }] });
  const entity = (call) =>
    parseJson(call?.result ?? '')?.entities?.find((e) => e.name.toLowerCase() === person.toLowerCase());
  const opened = calls.filter((c) => c.name === 'memory__open_nodes');
  const before = entity(opened[0]);

  // delete_observations answers in prose; every other memory tool answers JSON.
  if (
    last &&
    (/^Error/i.test(last.result) ||
      (last.name !== 'memory__delete_observations' && parseJson(last.result) === undefined))
  ) {
    return { content: `I could not finish: ${last.name} returned an error: ${last.result}` };
  }
  if (req.tool_choice === 'none') {
    return {
      content:
        `I ran out of rounds before finishing. What I know about ${person}: ` +
        `${quote(entity(opened.at(-1))?.observations ?? [])}.`,
    };
  }
  switch (last?.name) {
    case undefined:
      return use('search_nodes', { query: person }, `Searching the knowledge graph for ${person}.`);
    case 'memory__search_nodes': {
      const hit = entity(last);
      if (!hit) return { content: `There is no one named ${person} in the knowledge graph, so nothing was changed.` };
      return use('open_nodes', { names: [hit.name] }, `Found ${hit.name}; opening the record.`);
    }
    case 'memory__open_nodes': {
      if (opened.length === 1) {
        if (!before)
          return {
            content: `${person} disappeared from the graph before I could update the record; nothing was changed.`,
          };
        if (before.observations.includes(newFact))
          return { content: `${before.name} already ${newFact}: ${quote(before.observations)}. Nothing to change.` };
        return use(
          'add_observations',
          { observations: [{ entityName: before.name, contents: [newFact] }] },
          `Recording that ${before.name} ${newFact}.`,
        );
      }
      // Checked: report what the graph says now, in the tools' own words.
      const added = calls.find((c) => c.name === 'memory__add_observations');
      const removed = calls.find((c) => c.name === 'memory__delete_observations');
      const after = entity(last);
      return {
        content: [
          `Done. I found ${after.name} (${after.entityType}) with ${quote(before.observations)}.`,
          `I added "${newFact}": add_observations returned ${JSON.stringify(parseJson(added.result))}.`,
          removed
            ? `I removed ${quote(removed.args?.deletions?.[0]?.observations ?? [])}: ` +
              `delete_observations said "${removed.result}".`
            : '',
          `${after.name}'s record now reads: ${quote(after.observations)}.`,
        ]
          .filter(Boolean)
          .join(' '),
      };
    }
    case 'memory__add_observations': {
      const stale = before.observations.filter((o) => /^works at /i.test(o) && o !== newFact);
      if (stale.length)
        return use(
          'delete_observations',
          { deletions: [{ entityName: before.name, observations: stale }] },
          `Removing the old company: ${quote(stale)}.`,
        );
      return use('open_nodes', { names: [before.name] }, 'Checking the record.');
    }
    case 'memory__delete_observations':
      return use('open_nodes', { names: [before.name] }, 'Checking the record.');
    default:
      return { content: `I did not expect to call ${last.name}; stopping here.` };
  }
}
