import { createHash } from 'node:crypto';
import { homedir, userInfo } from 'node:os';

// Labels that leave the collector: no path, no user name. A project is the last segment of the working
// directory (what a person recognises), the workspace is a short hash of the whole directory (tells two
// "app" folders apart without naming where they live), a session keeps the agent's own opaque ID.

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
const SESSION_ID = /^[A-Za-z0-9_.:-]{1,80}$/;
export const MAX_PROJECT = 64;
export const MAX_MODEL = 128;

export function shortHash(value: string, length = 12): string {
  return createHash('sha256').update(value, 'utf8').digest('base64url').slice(0, length);
}

/** A printable, bounded string, or null. */
export function cleanLabel(value: unknown, max: number): string | null {
  if (typeof value !== 'string') return null;
  const text = value.replace(CONTROL, '').trim().slice(0, max);
  return text === '' ? null : text;
}

export interface Identity {
  home: string;
  user: string;
}

export function localIdentity(): Identity {
  let user = '';
  try {
    user = userInfo().username;
  } catch {
    // No passwd entry (containers): only the home directory is known.
  }
  return { home: homedir(), user };
}

export interface Place {
  project: string | null;
  workspace: string | null;
}

export function placeOf(cwd: unknown, identity: Identity): Place {
  if (typeof cwd !== 'string' || cwd === '' || cwd.length > 4096) return { project: null, workspace: null };
  const trimmed = cwd.replace(/[\\/]+$/, '');
  const workspace = `w-${shortHash(trimmed, 10)}`;
  const segment = trimmed.split(/[\\/]/).pop() ?? '';
  const home = identity.home.replace(/[\\/]+$/, '');
  // A home directory's last segment is usually the user name: never a label, nor part of one.
  if (trimmed === '' || trimmed === home) return { project: '~', workspace };
  const user = identity.user.toLowerCase();
  const lower = segment.toLowerCase();
  let label = segment;
  if (user.length >= 3) {
    for (let at = lower.lastIndexOf(user); at !== -1; at = at === 0 ? -1 : lower.lastIndexOf(user, at - 1)) {
      label = `${label.slice(0, at)}~${label.slice(at + user.length)}`;
    }
  }
  return { project: cleanLabel(label, MAX_PROJECT) ?? '~', workspace };
}

export function sessionOf(id: unknown): string | null {
  if (typeof id !== 'string' || id === '') return null;
  return SESSION_ID.test(id) ? id : `s-${shortHash(id, 12)}`;
}
