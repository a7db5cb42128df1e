export * from './agent-worker.js';
export * from './agent-step-processor.js';
export * from './budgets.js';
export * from './config.js';
export * from './step-decision.js';
export * from './model-step.js';
export * from './fan-out.js';
export * from './transcripts-in-flight.js';
