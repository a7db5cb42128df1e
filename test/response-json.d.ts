// `res.json()` untyped for test/subagents.test.ts, the one test file that still reads bodies without a type; the
// others type them with fixtures/api-client.ts (getJson, bodyOf, errorOf). This file goes once that one does too.
declare global {
  interface Response {
    // biome-ignore lint/suspicious/noExplicitAny: kept only until subagents.test.ts types its bodies (see above)
    json(): Promise<any>;
  }
}
export {};
