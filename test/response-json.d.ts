// Tests assert on the shape of JSON bodies; let `res.json()` be untyped there.
declare global {
  interface Response {
    json(): Promise<any>;
  }
}
export {};
