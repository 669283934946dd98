export * from './codec/index.js';
export * from './peer/index.js';
export * from './channels.js';
