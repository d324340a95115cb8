import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ServiceError } from '../../../../protocol/errors.ts';
import { responsesToMessagesRequest } from '../../../../workers/proxy/translate/responses-messages.ts';

// The Responses API over Messages: request goldens (test/fixtures/translate/responses-over-messages/).

const DIR = join(import.meta.dirname, '../../../fixtures/translate/responses-over-messages');

describe('responses over messages: requests', () => {
  for (const file of readdirSync(DIR).filter((f) => f.startsWith('request-') || f.startsWith('refuse-'))) {
    const c = JSON.parse(readFileSync(join(DIR, file), 'utf8')) as { name: string; request: Record<string, unknown>; upstreamRequest?: unknown; refused?: { param: string } };
    test(c.name, () => {
      const input = structuredClone(c.request);
      if (c.refused !== undefined) {
        assert.throws(() => responsesToMessagesRequest(input), (err: unknown) => err instanceof ServiceError && err.status === 400 && err.code === 'INVALID_REQUEST' && err.param === c.refused!.param);
        return;
      }
      assert.deepEqual({ ...responsesToMessagesRequest(input), model: 'upstream-model' }, c.upstreamRequest);
      assert.deepEqual(input, c.request, 'the client body is not changed in place');
    });
  }
});
