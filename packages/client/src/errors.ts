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

  /** Builds the error from a failed response, whatever its body. */
  static async from(res: Response): Promise<AgentqApiError> {
    const text = await res.text().catch(() => '');
    try {
      const { error } = JSON.parse(text) as { error?: { code?: unknown; message?: unknown; details?: unknown } };
      if (error && typeof error.code === 'string') return new AgentqApiError(res.status, error.code, String(error.message ?? error.code), error.details);
    } catch {
      // not the contract's shape: fall through
    }
    return new AgentqApiError(res.status, `http_${res.status}`, `${res.status} ${res.statusText}${text ? `: ${text.slice(0, 200)}` : ''}`);
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
