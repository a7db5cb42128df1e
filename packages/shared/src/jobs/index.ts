export * from './backoff.js';
export * from './catalog.js';
export * from './cells.js';
export * from './failed-jobs.js';
export * from './job-queues.js';
export * from './job-worker.js';
export * from './worker-errors.js';
