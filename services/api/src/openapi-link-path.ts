// The signed link's path of the OpenAPI document (openapi.ts): the one path an action's link opens
// without an API key.
import { errorResponse, linkError, linkErrors, linkParams, ref, type OpenApiPathItem } from './openapi-parts.js';

/** `GET|POST /v1/actions/{id}/respond`: answering one request by its signed link. */
export function actionLinkPath(): OpenApiPathItem {
  return {
    get: {
      tags: ['actions'],
      operationId: 'showActionLink',
      summary: "A signed link's page",
      description:
        'With ACTION_LINK_SECRET set, every pending request carries a `respond_url`: ' +
        'this path with a `token` that opens that one request, until it is answered or expires. No API key: ' +
        'the token is the key, and it opens nothing else. The page (HTML, no script, no external resources) ' +
        'shows the tool call or the question with its choices, and forms that answer it.',
      security: [],
      parameters: linkParams,
      responses: {
        200: { description: 'The page.', content: { 'text/html': { schema: { type: 'string' } } } },
        ...linkErrors,
      },
    },
    post: {
      tags: ['actions'],
      operationId: 'answerActionLink',
      summary: 'Answer by a signed link',
      description:
        'Answers the one request of the link, as a response of POST /v1/runs/{id}/actions does (checked the ' +
        'same way; recorded as decided `by: "link"`). A form (what the page sends: ' +
        '`approve` = `true`/`false`, `reason`, `arguments`, `output`, `answer`) is answered with a page, JSON ' +
        'with JSON. At most 2 MiB.',
      security: [],
      parameters: linkParams,
      requestBody: {
        required: true,
        content: {
          'application/x-www-form-urlencoded': {
            schema: {
              type: 'object',
              properties: {
                approve: { type: 'string', enum: ['true', 'false'] },
                reason: { type: 'string' },
                arguments: { type: 'string' },
                output: { type: 'string' },
                answer: { type: 'string' },
              },
              additionalProperties: false,
            },
          },
          'application/json': { schema: ref('LinkAnswer') },
        },
      },
      responses: {
        200: {
          description: 'Recorded: the request as it now stands (JSON), or a page saying so (form).',
          content: {
            'application/json': { schema: ref('ActionState') },
            'text/html': { schema: { type: 'string' } },
          },
        },
        400: linkError(
          "The answer does not fit the request (wrong kind, edited arguments that fail the tool's input " +
            'schema, an unknown field); `details` names the field.',
        ),
        413: linkError('The body is larger than 2 MiB (or MAX_BODY_BYTES).'),
        415: errorResponse('The body is neither a form (application/x-www-form-urlencoded) nor JSON.'),
        ...linkErrors,
      },
    },
  };
}
