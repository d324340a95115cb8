import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Type } from '@sinclair/typebox';
import { ServiceError } from '../../protocol/errors.ts';
import { checkSettingsPatch } from '../../protocol/http/settings.ts';
import { checkBody, compile, paramOf } from '../../protocol/validate.ts';

function failure(value: unknown): ServiceError {
  try {
    checkBody(checkSettingsPatch, value);
  } catch (err) {
    assert.ok(err instanceof ServiceError, String(err));
    return err;
  }
  assert.fail(`accepted ${JSON.stringify(value)}`);
}

describe('paramOf', () => {
  it('converts JSON pointers to dotted params', () => {
    assert.equal(paramOf(''), null);
    assert.equal(paramOf('/model'), 'model');
    assert.equal(paramOf('/runtime/tuning/threads'), 'runtime.tuning.threads');
    assert.equal(paramOf('/cors/allowedOrigins/2'), 'cors.allowedOrigins[2]');
    assert.equal(paramOf('/messages/0/content/1/text'), 'messages[0].content[1].text');
    assert.equal(paramOf('/0'), '[0]');
  });

  it('unescapes ~1 and ~0', () => {
    assert.equal(paramOf('/a~1b/c~0d'), 'a/b.c~d');
    assert.equal(paramOf('/~01'), '~1');
  });
});

describe('checkBody with checkSettingsPatch', () => {
  it('returns a valid patch unchanged', () => {
    const patch = {
      bind: { networkExposed: true },
      runtime: { tuning: { threads: 4 } },
      cors: { allowedOrigins: ['https://a.example'] },
    };
    assert.equal(checkBody(checkSettingsPatch, patch), patch);
    assert.deepEqual(checkBody(checkSettingsPatch, {}), {});
  });

  for (const [value, param] of [
    [{ foo: 1 }, 'foo'],
    [{ bind: { host: '0.0.0.0' } }, 'bind.host'],
    [{ bind: { port: 8080, networkExposed: true } }, 'bind.port'],
    [{ runtime: { tuning: { foo: 1 } } }, 'runtime.tuning.foo'],
    [{ limits: { jsonBodyBytes: 65536, extra: true } }, 'limits.extra'],
  ] as const) {
    it(`refuses unknown field ${param} as INVALID_JSON`, () => {
      const err = failure(value);
      assert.equal(err.code, 'INVALID_JSON');
      assert.equal(err.param, param);
      assert.equal(err.status, 400);
    });
  }

  it('prefers INVALID_JSON for an unknown field even beside a type error', () => {
    const err = failure({ usage: { enabled: 'yes' }, gauge: { bogus: 1 } });
    assert.equal(err.code, 'INVALID_JSON');
    assert.equal(err.param, 'gauge.bogus');
  });

  for (const [value, param] of [
    [{ runtime: { tuning: { threads: 'x' } } }, 'runtime.tuning.threads'],
    [{ runtime: { tuning: { threads: 1.5 } } }, 'runtime.tuning.threads'],
    [{ runtime: { tuning: { gpuLayers: -2 } } }, 'runtime.tuning.gpuLayers'],
    [{ cors: { allowedOrigins: [1] } }, 'cors.allowedOrigins[0]'],
    [{ cors: { allowedOrigins: ['https://a.example', ''] } }, 'cors.allowedOrigins[1]'],
    [{ cors: { allowedOrigins: 'https://a.example' } }, 'cors.allowedOrigins'],
    [{ bind: { networkExposed: 'true' } }, 'bind.networkExposed'],
    [{ bind: null }, 'bind'],
    [{ usage: { retentionDays: 0 } }, 'usage.retentionDays'],
    [{ limits: { jsonBodyBytes: 1 } }, 'limits.jsonBodyBytes'],
  ] as const) {
    it(`refuses a wrong value at ${param} as INVALID_REQUEST`, () => {
      const err = failure(value);
      assert.equal(err.code, 'INVALID_REQUEST');
      assert.equal(err.param, param);
      assert.ok(err.message.startsWith(`${param}: `), err.message);
    });
  }

  for (const value of [null, [], 'x', 42]) {
    it(`refuses a non-object body ${JSON.stringify(value)} with a null param`, () => {
      const err = failure(value);
      assert.equal(err.code, 'INVALID_REQUEST');
      assert.equal(err.param, null);
    });
  }
});

describe('checkBody with a compiled schema', () => {
  const check = compile(
    Type.Object(
      { items: Type.Array(Type.Object({ n: Type.Integer() }, { additionalProperties: false })) },
      { additionalProperties: false },
    ),
  );

  it('names nested array fields', () => {
    assert.throws(
      () => checkBody(check, { items: [{ n: 1 }, { n: 'two' }] }),
      (err: unknown) => err instanceof ServiceError && err.code === 'INVALID_REQUEST' && err.param === 'items[1].n',
    );
    assert.throws(
      () => checkBody(check, { items: [{ n: 1, m: 2 }] }),
      (err: unknown) => err instanceof ServiceError && err.code === 'INVALID_JSON' && err.param === 'items[0].m',
    );
  });
});
