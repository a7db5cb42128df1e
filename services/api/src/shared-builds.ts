/**
 * One build of an ended run's large answer (`/steps`, `/children`) for every request that asks
 * for it while it is being built. Building such an answer reads and parses everything the run
 * stored and writes it out again: for a run of 25 MB, tens of clients asking at once would each
 * cost the process that much CPU and hold up its other callers. An ended run's answer no longer
 * changes (but for the result of a call still in flight when the run was cancelled), so a request
 * that comes while the same answer is being built gets that build's result (the same bytes: it
 * is encoded once too). A run still going is built for each
 * request: its answer may change between two.
 * Requests are told apart by what they ask and the run's id, which the caller has already
 * checked the requester may read.
 */
export class SharedBuilds {
  private readonly building = new Map<string, Promise<Buffer>>();

  /** The JSON of `build()`'s result, built and encoded once for requests of `what` that overlap. */
  json(what: string, runId: string, build: () => Promise<unknown>): Promise<Buffer> {
    const key = `${what} ${runId}`;
    let body = this.building.get(key);
    if (!body) {
      body = build()
        .then((value) => Buffer.from(JSON.stringify(value)))
        .finally(() => this.building.delete(key));
      this.building.set(key, body);
    }
    return body;
  }
}
