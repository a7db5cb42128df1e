export * from './agent-worker.js';
export * from './agent-turn-processor.js';
export * from './budgets.js';
export * from './config.js';
export * from './decide-next.js';
export * from './model-step.js';
