// Anthropic refuses any request without a version header, so it travels with the key; 2023-06-01 is the
// version the Messages wire format this gateway speaks was published under.
export const ANTHROPIC_VERSION = '2023-06-01';

export function anthropicAuth(credential: string | null): Record<string, string> {
  return credential === null
    ? { 'anthropic-version': ANTHROPIC_VERSION }
    : { 'x-api-key': credential, 'anthropic-version': ANTHROPIC_VERSION };
}
