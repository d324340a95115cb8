import { isAbsolute, join } from 'node:path';
import { CollectorError } from '../types.ts';

// Where a local-logs source may read: the allow-listed `config.paths` of the source, or the agent's own
// default locations. Nothing outside these roots is ever opened (discover.ts checks symlinks against them).

export const MAX_ROOTS = 16;
const MAX_ROOT_LENGTH = 1024;

/** The configured roots, `~/` expanded; a config that is not a short list of absolute paths is refused. */
export function configuredRoots(config: Readonly<Record<string, unknown>>, home: string): string[] | null {
  const paths = config['paths'];
  if (paths === undefined || paths === null) return null;
  if (!Array.isArray(paths) || paths.length === 0 || paths.length > MAX_ROOTS) {
    throw new CollectorError('not_configured', `paths must list 1 to ${MAX_ROOTS} absolute directories`);
  }
  return paths.map((p: unknown) => {
    if (typeof p !== 'string' || p.length > MAX_ROOT_LENGTH || p.includes('\u0000')) {
      throw new CollectorError('not_configured', 'each path must be a string of at most 1024 characters');
    }
    const expanded = p === '~' ? home : p.startsWith('~/') ? join(home, p.slice(2)) : p;
    if (!isAbsolute(expanded)) throw new CollectorError('not_configured', 'each path must be absolute');
    return expanded;
  });
}

/** Claude Code: every directory in $CLAUDE_CONFIG_DIR (comma-separated), else ~/.config/claude and ~/.claude. */
export function claudeDefaultRoots(env: NodeJS.ProcessEnv, home: string): string[] {
  const configured = (env['CLAUDE_CONFIG_DIR'] ?? '')
    .split(',')
    .map((d) => d.trim())
    .filter((d) => d !== '' && isAbsolute(d));
  const bases = configured.length > 0 ? configured : [join(home, '.config', 'claude'), join(home, '.claude')];
  return bases.slice(0, MAX_ROOTS).map((base) => join(base, 'projects'));
}

/** Codex: ${CODEX_HOME:-~/.codex}/sessions. */
export function codexDefaultRoots(env: NodeJS.ProcessEnv, home: string): string[] {
  const codexHome = env['CODEX_HOME']?.trim();
  return [
    join(
      codexHome !== undefined && codexHome !== '' && isAbsolute(codexHome) ? codexHome : join(home, '.codex'),
      'sessions',
    ),
  ];
}
