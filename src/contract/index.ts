/** The message contract shared by the forwarder, the functions and the CLI. */
export * from './message.ts';
export * from './dlq.ts';
export * from './field-manager.ts';
export * from './names.ts';
export * from './ordering.ts';
