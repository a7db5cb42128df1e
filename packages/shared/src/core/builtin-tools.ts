import type { RunSpec } from './schemas/run.js';
import { typedSubagentTools } from './subagent-tools.js';

/** A tool agentq implements itself, offered without a server prefix. */
export interface BuiltinTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

const promptItem = {
  type: 'object',
  properties: {
    prompt: { type: 'string', description: 'The task for the sub-agent; it sees nothing else of this conversation.' },
    instructions: { type: 'string', description: 'Optional system prompt for the sub-agent.' },
    context_chunk: {
      type: 'string',
      description: 'Optional chunk id from context_chunks; its text is given to the sub-agent.',
    },
  },
  required: ['prompt'],
  additionalProperties: false,
};

export const SUBAGENT_TOOLS: BuiltinTool[] = [
  {
    name: 'agent_query',
    description:
      'Hand a self-contained subtask to a sub-agent with a fresh, ' +
      "isolated context (it does not see this conversation). Returns the sub-agent's final answer.",
    parameters: promptItem,
  },
  {
    name: 'agent_query_batch',
    description:
      'Run several independent subtasks in parallel, one sub-agent each. ' +
      'Returns a JSON array of their answers, in prompt order.',
    parameters: {
      type: 'object',
      properties: { prompts: { type: 'array', items: { anyOf: [{ type: 'string' }, promptItem] }, minItems: 1 } },
      required: ['prompts'],
      additionalProperties: false,
    },
  },
];

export const CONTEXT_TOOLS: BuiltinTool[] = [
  {
    name: 'context_info',
    description:
      "Describe the documents of this run's context (kept out of the prompt): names and sizes in characters.",
    parameters: { type: 'object', properties: {}, additionalProperties: false },
  },
  {
    name: 'context_read',
    description: 'Read a slice of a context document by character offset.',
    parameters: {
      type: 'object',
      properties: {
        name: { type: 'string', description: 'Document name; default the first document.' },
        offset: { type: 'integer', minimum: 0 },
        length: { type: 'integer', minimum: 1, maximum: 100000 },
      },
      required: ['offset', 'length'],
      additionalProperties: false,
    },
  },
  {
    name: 'context_search',
    description:
      'Search the context with a regular expression; returns matches with their offsets and surrounding text.',
    parameters: {
      type: 'object',
      properties: { pattern: { type: 'string' }, max_hits: { type: 'integer', minimum: 1, maximum: 1000 } },
      required: ['pattern'],
      additionalProperties: false,
    },
  },
  {
    name: 'context_chunks',
    description:
      'Split the context into chunks of at most max_chars characters; returns chunk ids to pass as ' +
      'context_chunk to agent_query / agent_query_batch. By default (by: chars) fixed windows overlapping by ' +
      'overlap_chars; by lines, paragraphs, markdown (sections, each chunk titled with its heading path) or json ' +
      '(top-level items) a chunk holds whole units, cut only when one alone is larger than max_chars.',
    parameters: {
      type: 'object',
      properties: {
        max_chars: { type: 'integer', minimum: 1 },
        overlap_chars: { type: 'integer', minimum: 0 },
        name: { type: 'string' },
        by: { type: 'string', enum: ['chars', 'lines', 'paragraphs', 'markdown', 'json'] },
      },
      required: ['max_chars'],
      additionalProperties: false,
    },
  },
];

/** The built-in tool that asks the user a question (`human_input`) and waits for the answer. */
export const ASK_HUMAN_TOOL: BuiltinTool = {
  name: 'ask_human',
  description:
    'Ask the user a question and wait for the answer (which may take a long time). ' +
    'Use it when only the user can tell you something; give choices when the answer is one of a few.',
  parameters: {
    type: 'object',
    properties: {
      question: { type: 'string', minLength: 1, maxLength: 4000, description: 'The question, complete in itself.' },
      choices: {
        type: 'array',
        items: { type: 'string', maxLength: 200 },
        minItems: 2,
        maxItems: 20,
        description: 'Optional answers to choose from.',
      },
    },
    required: ['question'],
    additionalProperties: false,
  },
};

/** Every built-in tool. */
export const BUILTIN_TOOLS: readonly BuiltinTool[] = [...SUBAGENT_TOOLS, ...CONTEXT_TOOLS, ASK_HUMAN_TOOL];

export const BUILTIN_TOOL_NAMES: ReadonlySet<string> = new Set(BUILTIN_TOOLS.map((t) => t.name));

/** The tools whose call starts sub-runs and waits for them in its own job. */
export const SUBAGENT_TOOL_NAMES: ReadonlySet<string> = new Set(SUBAGENT_TOOLS.map((t) => t.name));

/**
 * The built-in tools a run is offered: sub-agents when enabled (naming the saved agents it may
 * start, see typedSubagentTools), context tools when it has a
 * context, ask_human when it takes questions to the user.
 */
export function builtinToolsFor(
  spec: Pick<RunSpec, 'subagents' | 'has_context' | 'human_input' | 'subagent_types'>,
): BuiltinTool[] {
  const subagents = spec.subagent_types?.length
    ? typedSubagentTools(SUBAGENT_TOOLS, spec.subagent_types)
    : SUBAGENT_TOOLS;
  return [
    ...(spec.subagents?.enabled ? subagents : []),
    ...(spec.has_context ? CONTEXT_TOOLS : []),
    ...(spec.human_input ? [ASK_HUMAN_TOOL] : []),
  ];
}
