import type { RedisClient } from '../infra/redis.js';
import type { WebhookDelivery } from '../core/schemas/api.js';
import { runKeys } from './keys.js';

/** Each attempt to deliver a run's webhooks, as `GET /v1/runs/:id/webhook-deliveries` lists them. */
export class WebhookLog {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly retentionSeconds: number,
  ) {}

  async record(runId: string, attempt: WebhookDelivery): Promise<void> {
    const key = runKeys(this.prefix, runId).webhookDeliveries;
    await this.redis.multi().rpush(key, JSON.stringify(attempt)).expire(key, this.retentionSeconds).exec();
  }

  async list(runId: string): Promise<WebhookDelivery[]> {
    const raw = await this.redis.lrange(runKeys(this.prefix, runId).webhookDeliveries, 0, -1);
    return raw.map((r) => JSON.parse(r) as WebhookDelivery);
  }
}
