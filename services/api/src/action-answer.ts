import { BUILTIN_TOOLS, parseArguments, type ActionResponse, type SchemaValidators } from '@agentq/shared/core';
import { type RunStore } from '@agentq/shared/store';
import { decisionOf, type ActionDecision, type ActionRecord } from '@agentq/shared/runs';
import { HttpError } from './http-error.js';

/** What checking an answer needs: the tool catalog (input schemas) and the schema validators. */
export interface AnswerCheckDeps {
  store: RunStore;
  validators: SchemaValidators;
}

/** The field that answers each kind of request. */
const ANSWER_FIELD = { approval: 'approve', client_tool: 'output', input: 'answer' } as const;

/**
 * The decision `response` makes on a stored request, checked the same way whichever route it
 * came by (with a key, or by a signed link): it must be of the request's kind, and edited
 * arguments must be a JSON object that fits the tool's input schema (when the schema is known);
 * else a 400 naming the field. `prefix` is where the response sits in the body (`responses.0`;
 * empty when the body is the response).
 */
export async function checkedDecision(
  deps: AnswerCheckDeps,
  record: ActionRecord,
  response: ActionResponse,
  by: string,
  prefix = '',
): Promise<ActionDecision> {
  const field = (name: string) => (prefix ? `${prefix}.${name}` : name);
  const refuse = (at: string, message: string) =>
    new HttpError(400, 'validation_error', `${at}: ${message}`, [{ field: at, message }]);
  const decision = decisionOf(record, response, by);
  if (typeof decision === 'string') throw refuse(prefix || ANSWER_FIELD[record.type], decision);
  if (decision.arguments !== undefined) {
    const at = field('arguments');
    const args = parseArguments(decision.arguments);
    if (typeof args === 'string') throw refuse(at, args);
    const tool = record.name;
    const schema =
      BUILTIN_TOOLS.find((t) => t.name === tool)?.parameters ??
      (await deps.store.catalog.get()).find((t) => t.name === tool)?.input_schema;
    const problem = schema ? deps.validators.check({ name: tool, input_schema: schema }, args) : undefined;
    if (problem) throw refuse(at, `do not fit the input schema of ${tool}: ${problem}`);
  }
  return decision;
}
