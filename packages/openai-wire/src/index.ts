export * from './format-response.js';
