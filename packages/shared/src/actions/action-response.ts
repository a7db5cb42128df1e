import type { ActionResponse } from '../core/schemas/actions.js';
import type { ActionDecision, ActionRecord } from './action-record.js';

/**
 * The decision a response makes on a request, or why it does not fit the request's kind (an
 * approval takes `approve`, a client tool `output`, a question `answer`). Edited arguments are
 * checked by the caller, against the tool's input schema.
 */
export function decisionOf(
  record: ActionRecord,
  r: ActionResponse,
  by: string,
  at = new Date().toISOString(),
): ActionDecision | string {
  switch (record.type) {
    case 'approval':
      if (r.approve === undefined)
        return `${record.id} asks to approve a call of ${record.name}: answer with "approve": true or false`;
      return r.approve
        ? { decision: 'approved', ...(r.arguments !== undefined ? { arguments: r.arguments } : {}), by, at }
        : { decision: 'rejected', ...(r.reason !== undefined ? { reason: r.reason } : {}), by, at };
    case 'client_tool':
      if (r.output === undefined)
        return `${record.id} waits for the output of the client tool ${record.name}: answer with "output"`;
      return { decision: 'answered', output: r.output, by, at };
    case 'input':
      if (r.answer === undefined) return `${record.id} asks a question: answer with "answer"`;
      return { decision: 'answered', output: r.answer, by, at };
  }
}
