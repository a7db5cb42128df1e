export * from './api.js';
export * from './app.js';
export * from './config.js';
export type { OpenApiDocument, OpenApiOperation, OpenApiPathItem, OpenApiResponse, OpenApiSchema } from './openapi.js';
