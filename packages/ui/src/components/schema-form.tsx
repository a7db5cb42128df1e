import { useState } from 'preact/hooks';
import { fieldsOf, type Field, valuesToArguments } from '../lib/schema-fields.js';

/**
 * A form for a tool call's arguments, from the tool's input schema: a field per top-level property (text, number,
 * a yes/no box, a choice for an enum; JSON for objects and arrays), or the whole arguments as JSON. The API checks
 * the result against the schema again.
 */
export function SchemaForm(props: {
  schema: Record<string, unknown> | null;
  initial: string;
  busy: boolean;
  onSubmit: (argumentsJson: string) => void;
  onCancel: () => void;
}) {
  const fields = props.schema ? fieldsOf(props.schema, props.initial) : null;
  const [raw, setRaw] = useState(!fields);
  const [values, setValues] = useState<Record<string, string | boolean>>(() =>
    Object.fromEntries((fields ?? []).map((f) => [f.name, f.value])),
  );
  const [text, setText] = useState(() => pretty(props.initial));
  const [problem, setProblem] = useState<string | null>(null);

  const submit = (e: Event) => {
    e.preventDefault();
    const out = raw ? checkJson(text) : valuesToArguments(fields ?? [], values, props.initial);
    if (typeof out !== 'string') {
      setProblem(out.problem);
      return;
    }
    setProblem(null);
    props.onSubmit(out);
  };

  return (
    <form class="schema-form" onSubmit={submit}>
      {raw || !fields ? (
        <label class="field">
          <span>arguments (JSON)</span>
          <textarea
            name="arguments"
            rows={Math.min(16, text.split('\n').length + 1)}
            value={text}
            onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
          />
        </label>
      ) : (
        fields.map((f) => (
          <FieldInput
            key={f.name}
            field={f}
            value={values[f.name]}
            set={(v) => setValues({ ...values, [f.name]: v })}
          />
        ))
      )}
      {problem && <p class="problem">{problem}</p>}
      <div class="buttons">
        <button type="submit" class="primary" disabled={props.busy}>
          Approve with these arguments
        </button>
        {fields && (
          <button type="button" onClick={() => setRaw(!raw)}>
            {raw ? 'Form' : 'JSON'}
          </button>
        )}
        <button type="button" onClick={props.onCancel}>
          Back
        </button>
      </div>
    </form>
  );
}

function FieldInput({
  field,
  value,
  set,
}: {
  field: Field;
  value: string | boolean | undefined;
  set: (v: string | boolean) => void;
}) {
  const label = (
    <span>
      {field.name}
      {field.required && <em class="req"> required</em>}
      {field.description && <small> {field.description}</small>}
    </span>
  );
  if (field.kind === 'boolean')
    return (
      <label class="field check">
        <input
          type="checkbox"
          name={field.name}
          checked={value === true}
          onChange={(e) => set((e.target as HTMLInputElement).checked)}
        />
        {label}
      </label>
    );
  if (field.kind === 'enum')
    return (
      <label class="field">
        {label}
        <select
          name={field.name}
          value={String(value ?? '')}
          onChange={(e) => set((e.target as HTMLSelectElement).value)}
        >
          {!field.required && <option value="">(none)</option>}
          {field.options!.map((o) => (
            <option key={o} value={o}>
              {o}
            </option>
          ))}
        </select>
      </label>
    );
  if (field.kind === 'json' || field.kind === 'long')
    return (
      <label class="field">
        {label}
        <textarea
          name={field.name}
          rows={4}
          value={String(value ?? '')}
          onInput={(e) => set((e.target as HTMLTextAreaElement).value)}
        />
      </label>
    );
  const onInput = (e: Event) => set((e.target as HTMLInputElement).value);
  if (field.kind === 'number' || field.kind === 'integer')
    return (
      <label class="field">
        {label}
        <input
          name={field.name}
          type="number"
          step={field.kind === 'integer' ? 1 : 'any'}
          value={String(value ?? '')}
          onInput={onInput}
        />
      </label>
    );
  return (
    <label class="field">
      {label}
      <input name={field.name} type="text" value={String(value ?? '')} onInput={onInput} />
    </label>
  );
}

function pretty(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function checkJson(text: string): string | { problem: string } {
  try {
    const v = JSON.parse(text);
    if (typeof v !== 'object' || v === null || Array.isArray(v))
      return { problem: 'the arguments must be a JSON object' };
    return JSON.stringify(v);
  } catch (err) {
    return { problem: `not JSON: ${(err as Error).message}` };
  }
}
