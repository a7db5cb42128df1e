/** An error response of the API: its status and the contract's `{"error": {code, message, details}}`. */
export class AgentqApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = new.target.name;
  }

  /** Builds the error from a failed response, whatever its body (a lost race on a request: ActionResolvedError). */
  static async from(res: Response): Promise<AgentqApiError> {
    const text = await res.text().catch(() => '');
    try {
      const { error } = JSON.parse(text) as { error?: { code?: unknown; message?: unknown; details?: unknown } };
      if (error && typeof error.code === 'string') {
        const message = String(error.message ?? error.code);
        if (res.status === 409 && error.code === ActionResolvedError.CODE)
          return new ActionResolvedError(message, error.details);
        return new AgentqApiError(res.status, error.code, message, error.details);
      }
    } catch {
      // not the contract's shape: fall through
    }
    return new AgentqApiError(
      res.status,
      `http_${res.status}`,
      `${res.status} ${res.statusText}${text ? `: ${text.slice(0, 200)}` : ''}`,
    );
  }
}

/** How a request had been decided when an answer to it came too late. */
export interface ResolvedAction {
  id: string;
  /** `approved`, `rejected`, `answered`, `expired` or `cancelled`. */
  decision: string;
  /** When it was decided (null when the API does not know). */
  at: string | null;
}

/**
 * `409 action_resolved`: a request was decided before this answer reached it (by another
 * answer, its expiry or a cancel). The other responses of the same call were stored.
 */
export class ActionResolvedError extends AgentqApiError {
  static readonly CODE = 'action_resolved';
  /** The requests that were already decided, and how. */
  readonly resolved: ResolvedAction[];

  constructor(message: string, details?: unknown) {
    super(409, ActionResolvedError.CODE, message, details);
    this.resolved = Array.isArray(details)
      ? details
          .filter(
            (d): d is Record<string, unknown> =>
              typeof d === 'object' && d !== null && typeof (d as { id?: unknown }).id === 'string',
          )
          .map((d) => ({
            id: d.id as string,
            decision: String(d.decision ?? 'unknown'),
            at: typeof d.at === 'string' ? d.at : null,
          }))
      : [];
  }
}

/** `waitForRun` gave up before the run finished. */
export class AgentqTimeoutError extends Error {
  constructor(
    message: string,
    /** The run as last seen. */
    readonly run: unknown,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** A webhook whose signature or timestamp does not check out. */
export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}
