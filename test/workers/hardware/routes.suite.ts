import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import { createApp } from '../../../edge/http/app.ts';
import { corsPolicy } from '../../../edge/http/cors.ts';
import { hardwareRoutes } from '../../../edge/routes/hardware.ts';
import type { AuthResult } from '../../../control/token-service.ts';
import { checkHardwareTelemetry, type ProbeOutcome } from '../../../protocol/http/hardware.ts';
import type { Scope } from '../../../protocol/scopes.ts';
import { createHardwareActor, type HardwareActor } from '../../../workers/hardware/actor.ts';
import { assertNoSensitive, loadFixture, telemetryOf } from './helpers.ts';

// The two hardware routes in-process, through the real edge core (auth, scopes, errors) and a real actor
// whose probe is replaced by recorded fixture data.

const TOKENS: Record<string, Scope[]> = {
  ['sk-svc-' + 'R'.repeat(43)]: ['read'],
  ['sk-svc-' + 'M'.repeat(43)]: ['manage'],
  ['sk-svc-' + 'I'.repeat(43)]: ['inference'],
  ['sk-svc-' + 'A'.repeat(43)]: ['admin'],
};
const tokenFor = (scope: Scope) => Object.entries(TOKENS).find(([, scopes]) => scopes[0] === scope)![0];

function authenticate(secret: string): AuthResult {
  const scopes = TOKENS[secret];
  return scopes
    ? { ok: true, principal: { tokenId: `tok_${scopes[0]}`, scopes, serviceAccountId: null } }
    : { ok: false, reason: 'unknown' };
}

function appWith(actor: HardwareActor) {
  const app = createApp({
    routes: hardwareRoutes(actor),
    log: pino({ level: 'silent' }, new Writable({ write: (_c, _e, done) => done() })),
    authenticate,
    cors: () => corsPolicy([]),
    jsonBodyLimit: () => 1024 * 1024,
    multipartBodyLimit: () => 1024 * 1024,
    listener: { host: '127.0.0.1', networkExposed: false },
    isDraining: () => false,
  });
  return async (method: string, path: string, scope: Scope | null, options: { query?: string; body?: string } = {}) => {
    const headers: Record<string, string> = { host: '127.0.0.1:3939' };
    if (scope) headers['authorization'] = `Bearer ${tokenFor(scope)}`;
    const res = await app.handle({
      method,
      path,
      query: options.query ?? '',
      headers,
      body: options.body === undefined ? null : Buffer.from(options.body),
    });
    return { status: res.status, headers: res.headers, json: JSON.parse(res.body.toString()) };
  };
}

describe('hardware routes', () => {
  let probes = 0;
  let day = 0;
  const probeOverride = async (): Promise<ProbeOutcome> => {
    probes++;
    return {
      ok: true,
      telemetry: { ...telemetryOf('nvidia-workstation'), probedAt: new Date(Date.UTC(2026, 0, ++day)).toISOString() },
    };
  };
  const actor = createHardwareActor({ probeOverride });
  after(() => actor.close());
  const call = appWith(actor);

  it('GET /v1/hardware/telemetry with `read`: the cached telemetry in the documented shape, no probe', async () => {
    await actor.telemetry();
    const before = probes;
    const res = await call('GET', '/v1/hardware/telemetry', 'read');
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'application/json');
    assert.equal(
      checkHardwareTelemetry.Check(res.json),
      true,
      JSON.stringify([...checkHardwareTelemetry.Errors(res.json)][0]),
    );
    assert.deepEqual(res.json, {
      ...telemetryOf('nvidia-workstation'),
      probedAt: '2026-01-01T00:00:00.000Z',
      stale: false,
      partial: false,
      reason: null,
    });
    assertNoSensitive(res.json, loadFixture('nvidia-workstation').sensitive);
    assert.equal(probes, before);
  });

  it('POST /v1/hardware/refresh with `manage`: reprobes and answers the fresh result', async () => {
    const before = probes;
    const res = await call('POST', '/v1/hardware/refresh', 'manage');
    assert.equal(res.status, 200);
    assert.equal(probes, before + 1);
    assert.equal(checkHardwareTelemetry.Check(res.json), true);
    assert.equal(res.json.probedAt, new Date(Date.UTC(2026, 0, day)).toISOString());
    const read = await call('GET', '/v1/hardware/telemetry', 'read');
    assert.equal(read.json.probedAt, res.json.probedAt, 'GET serves the refreshed result');
  });

  it('scopes: GET needs `read`, POST needs `manage`; `admin` has both; no token is 401', async () => {
    const before = probes;
    const cases: [string, string, Scope | null, number, string | null][] = [
      ['GET', '/v1/hardware/telemetry', 'manage', 403, 'read'],
      ['GET', '/v1/hardware/telemetry', 'inference', 403, 'read'],
      ['POST', '/v1/hardware/refresh', 'read', 403, 'manage'],
      ['POST', '/v1/hardware/refresh', 'inference', 403, 'manage'],
      ['GET', '/v1/hardware/telemetry', null, 401, null],
      ['POST', '/v1/hardware/refresh', null, 401, null],
    ];
    for (const [method, path, scope, status, required] of cases) {
      const res = await call(method, path, scope);
      assert.equal(res.status, status, `${method} ${path} as ${scope}`);
      assert.equal(res.json.error.code, status === 401 ? 'UNAUTHORIZED' : 'FORBIDDEN');
      if (required) assert.equal(res.json.error.details.requiredScope, required);
    }
    assert.equal(probes, before, 'a refused refresh does not probe');
    assert.equal((await call('GET', '/v1/hardware/telemetry', 'admin')).status, 200);
    assert.equal((await call('POST', '/v1/hardware/refresh', 'admin')).status, 200);
    assert.equal(probes, before + 1);
  });

  it('refuses query parameters and other methods; a POST body is not read', async () => {
    const query = await call('GET', '/v1/hardware/telemetry', 'read', { query: 'verbose=1' });
    assert.equal(query.status, 400);
    assert.equal(query.json.error.code, 'INVALID_REQUEST');
    assert.equal(query.json.error.param, 'verbose');
    const put = await call('PUT', '/v1/hardware/refresh', 'admin');
    assert.equal(put.status, 405);
    assert.equal(put.headers['allow'], 'POST');
    const withBody = await call('POST', '/v1/hardware/refresh', 'manage', { body: '{"not json' });
    assert.equal(withBody.status, 200);
  });
});

describe('hardware routes with a hung probe', () => {
  it('GET and POST answer within the time limit, flagged', async () => {
    let hang = false;
    const probeOverride = (): Promise<ProbeOutcome> =>
      hang
        ? new Promise(() => undefined)
        : Promise.resolve({ ok: true, telemetry: telemetryOf('apple-silicon-laptop') });
    const actor = createHardwareActor({ timeoutMs: 300, probeOverride });
    try {
      const call = appWith(actor);
      await actor.telemetry();
      hang = true;
      const started = performance.now();
      const res = await call('POST', '/v1/hardware/refresh', 'manage');
      assert.ok(performance.now() - started < 550);
      assert.equal(res.status, 200);
      assert.deepEqual([res.json.stale, res.json.partial, res.json.reason], [true, false, 'probe_timeout']);
      assert.equal(res.json.gpus[0].name, 'Apple M2 Pro', 'the last good data');
      const read = await call('GET', '/v1/hardware/telemetry', 'read');
      assert.deepEqual([read.json.stale, read.json.reason], [true, 'probe_timeout']);
    } finally {
      await actor.close();
    }
  });
});
