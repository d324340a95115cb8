import { ServiceError } from './errors.ts';
import { grants } from './scopes.ts';
import type { Principal } from './principal.ts';

// Where a stored credential is sent is part of the credential (docs/api.md, "Providers"): a token that may
// not read a key must not be able to point the service at its own host and have the key delivered there.
// So moving a record that holds a credential to another address needs `admin`, unless the same write
// supplies the credential (then nothing stored goes anywhere new).

export interface RedirectCheck {
  /** The record holds a stored credential now. */
  hasCredential: boolean;
  before: string | null | undefined;
  after: string | null | undefined;
  /** The write sets the credential (a new one, or null to clear it). */
  suppliesCredential: boolean;
  /** The caller holds `admin`. */
  mayRedirect: boolean;
  param: string;
}

export function mayRedirectCredentials(principal: Principal | null): boolean {
  return principal === null || grants(principal.scopes, 'admin');
}

export function checkCredentialRedirect(check: RedirectCheck): void {
  if (!check.hasCredential || check.suppliesCredential || check.mayRedirect) return;
  if ((check.before ?? null) === (check.after ?? null)) return;
  throw new ServiceError(
    'FORBIDDEN',
    'Sending a stored credential to a new address needs an admin token; or send the credential again in the same ' +
      'request.',
    {
      param: check.param,
    },
  );
}
