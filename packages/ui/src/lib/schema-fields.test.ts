import { describe, expect, it } from 'vitest';
import { fieldsOf, valuesToArguments } from './schema-fields.js';

const schema = {
  type: 'object',
  properties: {
    id: { type: 'string', description: 'the contact' },
    company: { type: 'string' },
    priority: { type: 'integer' },
    urgent: { type: 'boolean' },
    level: { enum: ['low', 'high'] },
    tags: { type: 'array', items: { type: 'string' } },
  },
  required: ['id', 'company'],
};

describe('the edit form of a call', () => {
  it('has a field per property, filled from the arguments', () => {
    const fields = fieldsOf(schema, '{"id":"c2","company":"Initech","priority":3,"tags":["a"]}')!;
    expect(fields.map((f) => [f.name, f.kind, f.required, f.value])).toEqual([
      ['id', 'string', true, 'c2'],
      ['company', 'string', true, 'Initech'],
      ['priority', 'integer', false, '3'],
      ['urgent', 'boolean', false, false],
      ['level', 'enum', false, ''],
      ['tags', 'json', false, '[\n  "a"\n]'],
    ]);
    expect(fields.find((f) => f.name === 'level')?.options).toEqual(['low', 'high']);
  });

  it('gives back the arguments with the values typed, leaving out empty optional fields', () => {
    const initial = '{"id":"c2","company":"Initech"}';
    const fields = fieldsOf(schema, initial)!;
    const values = { id: 'c2', company: 'EPAM', priority: '5', urgent: true, level: 'high', tags: '["x"]' };
    expect(JSON.parse(valuesToArguments(fields, values, initial) as string)).toEqual({
      id: 'c2',
      company: 'EPAM',
      priority: 5,
      urgent: true,
      level: 'high',
      tags: ['x'],
    });
    expect(JSON.parse(valuesToArguments(fields, { id: 'c2', company: 'EPAM' }, initial) as string)).toEqual({
      id: 'c2',
      company: 'EPAM',
    });
  });

  it('says what is wrong instead of sending it', () => {
    const fields = fieldsOf(schema, '{}')!;
    expect(valuesToArguments(fields, { id: 'c2', company: '' }, '{}')).toEqual({ problem: 'company is required' });
    expect(valuesToArguments(fields, { id: 'c2', company: 'x', priority: '1.5' }, '{}')).toEqual({
      problem: 'priority must be a whole number',
    });
    expect(valuesToArguments(fields, { id: 'c2', company: 'x', tags: '[' }, '{}')).toEqual({
      problem: 'tags is not valid JSON',
    });
  });

  it('edits the arguments as JSON when the schema has no properties or they name other keys', () => {
    expect(fieldsOf({ type: 'object' }, '{}')).toBeNull();
    expect(fieldsOf({ type: 'string' }, '"x"')).toBeNull();
    expect(fieldsOf(schema, '{"id":"c2","company":"x","extra":1}')).toBeNull();
  });
});
