import assert from 'node:assert/strict';
import { homedir } from 'node:os';
import { test } from 'node:test';
import type { GaugeActivityBucket } from '../../../protocol/gauge.ts';
import { sanitizeActivity } from '../../../workers/gauge/sanitize.ts';

// Activity labels as they are stored: a home path or an email that a collector let through never reaches
// storage (the local-log collectors already reduce places to a project name and a hashed workspace).

const bucket = (project: string | null, workspace: string | null): GaugeActivityBucket => ({
  hour: '2026-06-01T10:20:00Z',
  sourceId: 'x',
  providerId: 'x',
  model: 'm',
  project,
  workspace,
  session: 's',
  requests: 1,
  inputTokens: 1,
  outputTokens: 1,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
});

test('a home path or an email in a workspace or project never reaches storage', () => {
  const home = homedir();
  const [stored] = sanitizeActivity(
    [bucket(`${home}/code/app`, `${home}/code/app (ada.lovelace@example.com)`)],
    'claude-code',
    'claude-code',
  );
  const text = JSON.stringify(stored);
  assert.ok(!text.includes(home), text);
  assert.ok(!text.includes('ada.lovelace'), text);
  assert.equal(stored!.project, 'app');
  assert.match(stored!.workspace!, /^w-[\w-]{10}$/);
  assert.equal(stored!.hour, '2026-06-01T10:00:00.000Z');
  assert.equal(sanitizeActivity([bucket(home, 'C:\\Users\\ada\\src')], 'x', 'x')[0]!.project, '~');
  assert.deepEqual(
    sanitizeActivity([bucket('ops@example.com', 'w-abc')], 'x', 'x').map((b) => [b.project, b.workspace]),
    [['@example.com', 'w-abc']],
  );
});
