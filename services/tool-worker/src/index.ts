export * from './config.js';
export * from './mcp-config.js';
export * from './mcp-registry.js';
export * from './tool-call-processor.js';
export * from './tool-output.js';
export * from './tool-worker.js';
export * from './webhook-delivery.js';
export * from './webhook-signature.js';
