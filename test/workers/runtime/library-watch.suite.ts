import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, describe, it } from 'node:test';
import pino from 'pino';
import type { RuntimeModelList } from '../../../protocol/http/runtime.ts';
import {
  createModelLibrary,
  type LibraryChange,
  type ModelLibraryOptions,
} from '../../../workers/runtime/library-watch.ts';
import { writeCorruptModel, writeTinyModel } from '../../helpers/gguf.ts';

// The edge's model library: created at start, watched (or re-read on demand when watching fails), unhealthy
// files logged once each, llama.cpp's refusals applied to the listing.

const root = mkdtempSync(join(tmpdir(), 'sy-library-'));
// The watcher and the debounce timer do not hold the process (the service's listener does): this stands in.
const hold = setInterval(() => undefined, 60_000);
after(() => {
  clearInterval(hold);
  rmSync(root, { recursive: true, force: true });
});

function setup(dir: string, extra: Partial<ModelLibraryOptions> = {}) {
  const lines: Record<string, unknown>[] = [];
  const log = pino(
    { level: 'info' },
    new Writable({
      write(chunk, _enc, done) {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    }),
  );
  const changes: { list: RuntimeModelList; change: LibraryChange }[] = [];
  let notify: (() => void) | null = null;
  const library = createModelLibrary({
    directory: () => dir,
    log,
    debounceMs: 20,
    onChange: (list, change) => {
      changes.push({ list, change });
      notify?.();
    },
    ...extra,
  });
  /** Resolves on the next change. */
  const changed = () => new Promise<void>((r) => (notify = r));
  return { library, lines, changes, changed };
}

describe('model library', () => {
  it('creates a missing models directory at start', async () => {
    const dir = join(root, 'a', 'models');
    const { library } = setup(dir);
    await library.start();
    assert.ok(statSync(dir).isDirectory());
    assert.equal(library.watching(), true);
    library.close();
  });

  it("does not create a directory set later: that one is the user's to create", async () => {
    let dir = join(root, 'f');
    const { library, lines } = setup('', { directory: () => dir });
    await library.start();
    dir = join(root, 'g', 'models');
    await library.reconfigure();
    await library.read();
    assert.equal(existsSync(dir), false);
    assert.equal(library.watching(), false);
    assert.ok(
      lines.some(
        (l) => l.msg === 'cannot watch the models directory; the library is re-read on demand' && l.code === 'ENOENT',
      ),
    );
    library.close();
  });

  it('picks up a new file and a removed one while watching, naming them', async () => {
    const dir = join(root, 'b');
    const { library, changed, changes } = setup(dir);
    await library.start();
    let next = changed();
    writeTinyModel(join(dir, 'new.gguf'));
    await next;
    assert.deepEqual(changes.at(-1)!.change, { added: ['new.gguf'], removed: [] });
    assert.equal(library.lookup('new.gguf')?.health, 'ok');
    next = changed();
    rmSync(join(dir, 'new.gguf'));
    await next;
    assert.deepEqual(changes.at(-1)!.change, { added: [], removed: ['new.gguf'] });
    assert.equal(library.lookup('new.gguf'), undefined);
    library.close();
  });

  it('re-reads on demand when the directory cannot be watched', async () => {
    const dir = join(root, 'c');
    const { library, changed, lines } = setup(dir, {
      watch: () => {
        throw Object.assign(new Error('no watching here'), { code: 'ENOSPC' });
      },
    });
    await library.start();
    assert.equal(library.watching(), false);
    assert.ok(existsSync(dir));
    assert.ok(
      lines.some(
        (l) => l.msg === 'cannot watch the models directory; the library is re-read on demand' && l.code === 'ENOSPC',
      ),
    );
    writeTinyModel(join(dir, 'late.gguf'));
    const next = changed();
    library.missed();
    await next;
    assert.equal(library.lookup('late.gguf')?.health, 'ok');
    // A listing is a fresh read too.
    rmSync(join(dir, 'late.gguf'));
    assert.deepEqual((await library.read()).data, []);
    library.close();
  });

  it('warns once per unhealthy file version, by name, never a path', async () => {
    const dir = join(root, 'd');
    const { library, lines } = setup(dir, {
      watch: () => {
        throw new Error('off');
      },
    });
    await library.start();
    writeCorruptModel(join(dir, 'bad.gguf'));
    writeFileSync(join(dir, 'text.gguf'), 'not a model');
    await library.read();
    await library.read();
    const warned = lines.filter((l) => l.msg === 'unhealthy model file in the library');
    assert.deepEqual(warned.map((l) => [l.model, l.health]).sort(), [
      ['bad.gguf', 'corrupt'],
      ['text.gguf', 'corrupt'],
    ]);
    assert.equal(JSON.stringify(lines).includes(root), false);
    library.close();
  });

  it('marks a file version llama.cpp refused as corrupt with its reason, until the file changes', async () => {
    const dir = join(root, 'e');
    const { library } = setup(dir, {
      watch: () => {
        throw new Error('off');
      },
    });
    await library.start();
    writeTinyModel(join(dir, 'm.gguf'));
    const [view] = (await library.read()).data;
    assert.equal(view?.health, 'ok');
    library.heard({
      t: 'refused',
      name: 'm.gguf',
      sizeBytes: view!.sizeBytes,
      modifiedAt: view!.modifiedAt,
      problem: 'llama.cpp refused it: missing tensor',
    });
    const [refused] = (await library.read()).data;
    assert.deepEqual([refused?.health, refused?.problem], ['corrupt', 'llama.cpp refused it: missing tensor']);
    writeTinyModel(join(dir, 'm.gguf'), { seed: 99, layers: 1 });
    const [replaced] = (await library.read()).data;
    assert.equal(replaced?.health, 'ok', 'a new version of the file is judged again');
    library.close();
  });
});
