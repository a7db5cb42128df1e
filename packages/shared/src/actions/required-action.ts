import type { ActionItemView, RunObject } from '../core/schemas/run.js';
import type { RunStore } from '../store/run-store.js';
import { actionView } from './action-record.js';

/**
 * The run with `required_action` (every request of it and its sub-runs that waits) while its
 * status is `requires_action`; `decorate` adds to each item (a signed link).
 */
export async function withRequiredAction(
  store: RunStore,
  run: RunObject,
  decorate: (item: ActionItemView) => ActionItemView = (i) => i,
): Promise<RunObject> {
  if (run.status !== 'requires_action') return run;
  const items = (await store.actions.pending(run.id)).map((r) => decorate(actionView(r)));
  return { ...run, required_action: { items } };
}
