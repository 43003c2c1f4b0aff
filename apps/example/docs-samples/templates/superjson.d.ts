// A stub of superjson's default export, enough for the samples of docs/trpc-templates.md
// (apps/example does not depend on superjson).
declare module 'superjson' {
  const superjson: {
    stringify(value: unknown): string;
    parse<T = unknown>(text: string): T;
    serialize(value: unknown): { json: unknown; meta?: unknown };
    deserialize<T = unknown>(payload: { json: unknown; meta?: unknown }): T;
  };
  export default superjson;
}
