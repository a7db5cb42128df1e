import { describe, expect, it } from 'vitest';
import { createLogger } from '../infra/logger.js';
import { SchemaValidators } from './tool-arguments.js';

const validators = () => new SchemaValidators(createLogger({ service: 'test', level: 'silent' }));
const tool = (pattern: string) => ({
  name: 'srv__t',
  input_schema: { type: 'object', properties: { q: { type: 'string', pattern } } },
});

describe("a tool's inputSchema patterns", () => {
  it('check a catastrophic pattern right', () => {
    // On a backtracking engine the first is exponential in the run of `a`s (0.6 s at 26 of
    // them, 10 s at 30): kept short so that a regression costs seconds, not hours; the test
    // below shows which engine runs.
    expect(validators().check(tool('^(a+)+$'), { q: `${'a'.repeat(30)}!` })).toBe('/q must match pattern "^(a+)+$"');
    expect(validators().check(tool('^(a+)+$'), { q: 'a'.repeat(100_000) })).toBeUndefined();
  });

  it('keep one compiled pattern per pattern', () => {
    const v = validators();
    const two = {
      name: 'srv__two',
      input_schema: {
        type: 'object',
        properties: { x: { type: 'string', pattern: '^x+$' }, y: { type: 'string', pattern: '^y+$' } },
      },
    };
    expect(v.check(two, { x: 'xx', y: 'yy' })).toBeUndefined();
    expect(v.check(two, { x: 'yy', y: 'xx' })).toBe('/x must match pattern "^x+$"; /y must match pattern "^y+$"');
  });

  it(
    'that RE2 cannot run (lookahead, backreferences) leave the ' +
      'schema to the server, as any schema that does not compile',
    () => {
      // The engine is RE2: it has no linear-time lookahead, so the schema does not compile and
      // the call goes through unchecked (the server validates its own arguments).
      expect(validators().check(tool('^(?=a)a$'), { q: 'zzz' })).toBeUndefined();
      expect(validators().check(tool('^(a)\\1$'), { q: 'zzz' })).toBeUndefined();
    },
  );
});
