// A tool's input schema as form fields: one per top-level property of an object schema. Whatever the form cannot
// show as a plain input (objects, arrays, unions) is edited as JSON; a schema that is not an object with
// properties gets no fields (the form then edits the whole arguments as JSON).

export type FieldKind = 'string' | 'long' | 'number' | 'integer' | 'boolean' | 'enum' | 'json';

export interface Field {
  name: string;
  kind: FieldKind;
  required: boolean;
  description?: string;
  options?: string[];
  /** The value from the call's arguments, as the input holds it. */
  value: string | boolean;
}

type Schema = Record<string, unknown>;

const kindOf = (s: Schema): FieldKind => {
  if (Array.isArray(s.enum) && s.enum.every((v) => typeof v === 'string')) return 'enum';
  const t = Array.isArray(s.type) ? s.type.filter((x) => x !== 'null') : [s.type];
  if (t.length !== 1) return 'json';
  switch (t[0]) {
    case 'string':
      return 'string';
    case 'number':
      return 'number';
    case 'integer':
      return 'integer';
    case 'boolean':
      return 'boolean';
    default:
      return 'json';
  }
};

/** The fields of an object schema, filled from the call's arguments (JSON text); null when it has none. */
export function fieldsOf(schema: Schema, argumentsJson: string): Field[] | null {
  const props = schema.properties;
  if (schema.type !== 'object' || typeof props !== 'object' || props === null) return null;
  let args: Record<string, unknown> = {};
  try {
    const v = JSON.parse(argumentsJson);
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) args = v as Record<string, unknown>;
  } catch {
    // Arguments that are not JSON: the fields start empty.
  }
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  const fields = Object.entries(props as Record<string, Schema>).map(([name, s]): Field => {
    const kind = kindOf(s ?? {});
    const v = args[name];
    let value: string | boolean;
    if (kind === 'boolean') value = v === true;
    else if (kind === 'json') value = v === undefined ? '' : JSON.stringify(v, null, 2);
    else value = v === undefined || v === null ? '' : String(v);
    // A text of several lines (or a long one) gets a text area.
    const long = kind === 'string' && typeof value === 'string' && (value.includes('\n') || value.length > 80);
    return {
      name,
      kind: long ? 'long' : kind,
      required: required.has(name),
      ...(typeof s?.description === 'string' ? { description: s.description } : {}),
      ...(kind === 'enum' ? { options: s.enum as string[] } : {}),
      value,
    };
  });
  // Arguments the schema does not name would be lost by the form: then it is edited as JSON.
  if (Object.keys(args).some((k) => !(k in (props as object)))) return null;
  return fields;
}

/** The arguments (JSON text) the form's values make, or the problem with them. */
export function valuesToArguments(
  fields: Field[],
  values: Record<string, string | boolean>,
  initial: string,
): string | { problem: string } {
  const out: Record<string, unknown> = {};
  let base: Record<string, unknown> = {};
  try {
    const v = JSON.parse(initial);
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) base = v as Record<string, unknown>;
  } catch {
    base = {};
  }
  for (const f of fields) {
    const v = values[f.name];
    if (f.kind === 'boolean') {
      if (v === true || f.required || f.name in base) out[f.name] = v === true;
      continue;
    }
    const text = typeof v === 'string' ? v : '';
    if (text === '') {
      if (f.required) return { problem: `${f.name} is required` };
      continue;
    }
    if (f.kind === 'number' || f.kind === 'integer') {
      const n = Number(text);
      if (!Number.isFinite(n) || (f.kind === 'integer' && !Number.isInteger(n)))
        return { problem: `${f.name} must be ${f.kind === 'integer' ? 'a whole number' : 'a number'}` };
      out[f.name] = n;
    } else if (f.kind === 'json') {
      try {
        out[f.name] = JSON.parse(text);
      } catch {
        return { problem: `${f.name} is not valid JSON` };
      }
    } else out[f.name] = text;
  }
  return JSON.stringify(out);
}
