import { treeTag } from '../core/ids.js';

/**
 * A cell is one set of agentq's queues under its own hash tag, so that a Redis Cluster puts each
 * cell's queues on one slot (a flow's parent and children must share one) and spreads the cells
 * over shards. A run and its whole tree live in one cell, chosen from the tree's tag.
 */
export function cellOf(runId: string, cells: number): number {
  if (cells <= 1) return 0;
  // FNV-1a over the tag: cheap, and even over cells.
  let h = 0x811c9dc5;
  for (const ch of treeTag(runId)) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
  return h % cells;
}

/** The BullMQ prefix of a cell's queues: the deployment's prefix, tagged with the cell. */
export const cellPrefix = (prefix: string, cell: number) => `${prefix}:{c${cell}}`;

/** A queue's name in a cell: the plain name when there is one cell, else suffixed (the dashboard keys queues by name). */
export const cellQueueName = (name: string, cell: number, cells: number) => (cells <= 1 ? name : `${name}-c${cell}`);

/** The cells `0 … cells-1`, or those a worker is pinned to. */
export function cellList(cells: number, pinned?: number[]): number[] {
  return pinned?.length ? [...pinned] : Array.from({ length: cells }, (_, i) => i);
}
