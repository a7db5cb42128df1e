import { z } from 'zod';

/** The longest output, answer or edited arguments a response may carry (characters). */
export const MAX_RESPONSE_CHARS = 1_000_000;
/** How many responses one request may carry. */
export const MAX_RESPONSES = 128;

const ACTION_ID = /^act_[0-9a-z]{21}_\d{1,3}_\d{1,3}$/;

/** What a response says, whichever request it answers. */
const answerFields = {
  approve: z.boolean().optional(),
  arguments: z.string().max(MAX_RESPONSE_CHARS).optional(),
  reason: z.string().max(4000).optional(),
  output: z.string().max(MAX_RESPONSE_CHARS).optional(),
  answer: z.string().max(MAX_RESPONSE_CHARS).optional(),
};

/** A response says one thing, and `arguments` and `reason` go only with the approval they qualify. */
function checkOneAnswer(
  r: { approve?: boolean; arguments?: string; reason?: string; output?: string; answer?: string },
  ctx: z.RefinementCtx,
): void {
  const given = (['approve', 'output', 'answer'] as const).filter((k) => r[k] !== undefined);
  if (given.length !== 1) {
    ctx.addIssue({
      code: 'custom',
      path: given.length ? [given[1]] : ['approve'],
      message: 'give exactly one of "approve" (an approval), "output" (a client tool) or "answer" (a question)',
    });
  }
  if (r.arguments !== undefined && r.approve !== true)
    ctx.addIssue({ code: 'custom', path: ['arguments'], message: 'edited arguments go with "approve": true' });
  if (r.reason !== undefined && r.approve !== false)
    ctx.addIssue({ code: 'custom', path: ['reason'], message: 'a reason goes with "approve": false' });
}

/**
 * One response to a request for an answer: `approve` (true, maybe with edited `arguments`; or
 * false with a `reason`) for an approval, `output` for a client tool, `answer` for a question.
 */
export const actionResponseSchema = z
  .strictObject({ id: z.string().max(64), ...answerFields })
  .superRefine(checkOneAnswer);
export type ActionResponse = z.infer<typeof actionResponseSchema>;

/** The body of `POST /v1/runs/:id/actions`. */
export const respondBodySchema = z.strictObject({
  responses: z
    .array(actionResponseSchema)
    .min(1, 'give at least one response')
    .max(MAX_RESPONSES)
    .refine((rs) => new Set(rs.map((r) => r.id)).size === rs.length, 'two responses answer the same request'),
});

/** The query of `GET /v1/actions`. */
export const listActionsQuerySchema = z.strictObject({
  status: z.enum(['pending', 'resolved']).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  after: z.string().regex(ACTION_ID, 'a request id (the "next" of the previous page)').optional(),
});

/**
 * The JSON body of `POST /v1/actions/:id/respond` (a signed link): one response, its request
 * named by the link (an `id`, if given, must be that one).
 */
export const linkAnswerSchema = z
  .strictObject({ id: z.string().max(64).optional(), ...answerFields })
  .superRefine(checkOneAnswer);
export type LinkAnswer = z.infer<typeof linkAnswerSchema>;
