/**
 * One build of a run's large answer (`/steps`, `/children`) for every request that asks for it
 * at about the same time. Building such an answer reads and parses everything the run stored and
 * writes it out again: for a run of 25 MB, tens of clients asking at once would each cost the
 * process that much CPU and hold up its other callers. Each build's result is encoded once too,
 * and every request that shares it gets the same bytes.
 *
 * Requests are told apart by what they ask and the run's id, which the caller has already
 * checked the requester may read.
 */
export class SharedBuilds {
  /** Builds under way. */
  private readonly building = new Map<string, Promise<Buffer>>();
  /** Builds that start once the one under way ends (`fresh`). */
  private readonly next = new Map<string, Promise<Buffer>>();

  /**
   * For an ended run, whose answer no longer changes (but for the result of a call still in
   * flight when the run was cancelled): a request that comes while the answer is being built
   * gets that build's result.
   */
  json(what: string, runId: string, build: () => Promise<unknown>): Promise<Buffer> {
    const key = `${what} ${runId}`;
    return this.building.get(key) ?? this.start(key, build);
  }

  /**
   * For a run still going, whose answer may change from one moment to the next: a request gets
   * a build that starts after it came, so it sees every write made before it. One that comes
   * while the answer is being built waits for that build to end and shares the next one with the
   * others that came meanwhile: at most two builds of an answer at a time, however many ask.
   */
  fresh(what: string, runId: string, build: () => Promise<unknown>): Promise<Buffer> {
    // Apart from json()'s: a request for the run once it has ended must not get a build that
    // started while it was still going.
    const key = `${what} ${runId} going`;
    const queued = this.next.get(key);
    if (queued !== undefined) return queued;
    const current = this.building.get(key);
    if (current === undefined) return this.start(key, build);
    const body = current
      .catch(() => {})
      .then(() => {
        this.next.delete(key);
        return this.start(key, build);
      });
    this.next.set(key, body);
    return body;
  }

  private start(key: string, build: () => Promise<unknown>): Promise<Buffer> {
    const body: Promise<Buffer> = build()
      .then((value) => Buffer.from(JSON.stringify(value)))
      .finally(() => {
        if (this.building.get(key) === body) this.building.delete(key);
      });
    this.building.set(key, body);
    return body;
  }
}
