export * from './api.js';
export * from './app.js';
export * from './config.js';
