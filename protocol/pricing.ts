import type { ModelPricing } from './http/catalog.ts';

// The one estimate of what a call cost: metered tokens times the catalog's price. Every caller (the meter, at
// the time of the call; Gauge's budgets and service source, through the stored estimates) goes through here.
//
// Token counters arrive normalised by the proxy's usage collectors, whatever the protocol:
// - inputTokens is the whole prompt. styleA's prompt_tokens already is; styleB's three prompt figures
//   (input_tokens, cache_creation_input_tokens, cache_read_input_tokens) are summed into it.
// - cachedInputTokens (styleA cached_tokens, styleB cache_read_input_tokens) and cacheWriteTokens (styleB
//   cache_creation_input_tokens) are parts of inputTokens, never additions to it; cacheWrite1hTokens (styleB
//   cache_creation.ephemeral_1h_input_tokens) is the part of cacheWriteTokens written for one hour.
// So each prompt token is priced exactly once: at the cache-read price, the cache-write price, or the plain
// input price for the rest. Reasoning tokens are part of the output in both protocols and are not added again.

/** The estimate is in USD, like provider-reported cost; a price in another currency gives no estimate. */
export const ESTIMATE_CURRENCY = 'USD';

/** Where the price the meter uses came from: the catalog record's `pricing`, or the database `<name>@<version>`. */
export type PricingSource = 'catalog' | `${string}@${string}`;

export interface PricedTokens {
  inputTokens: number | null;
  outputTokens: number | null;
  cachedInputTokens: number | null;
  cacheWriteTokens?: number | null;
  cacheWrite1hTokens?: number | null;
}

const nonNegative = (n: number | null | undefined): number =>
  typeof n === 'number' && Number.isFinite(n) && n > 0 ? n : 0;

/**
 * USD for `tokens` at `pricing`, or null when there is no USD price or no token was reported. A cache price
 * that is not set (null) prices those tokens as plain input: no discount or premium is invented.
 */
export function estimateCostUsd(tokens: PricedTokens, pricing: ModelPricing | null | undefined): number | null {
  if (!pricing || pricing.currency !== ESTIMATE_CURRENCY) return null;
  if (tokens.inputTokens === null && tokens.outputTokens === null) return null;
  const input = nonNegative(tokens.inputTokens);
  // Clamped so that a provider reporting more cached than total input cannot make the rest negative.
  const cached = Math.min(nonNegative(tokens.cachedInputTokens), input);
  const written = Math.min(nonNegative(tokens.cacheWriteTokens), input - cached);
  const writtenHour = Math.min(nonNegative(tokens.cacheWrite1hTokens), written);
  const plain = input - cached - written;
  const micro =
    plain * pricing.inputPerMTok +
    cached * (pricing.cachedInputPerMTok ?? pricing.inputPerMTok) +
    (written - writtenHour) * (pricing.cacheWritePerMTok ?? pricing.inputPerMTok) +
    writtenHour * (pricing.cacheWrite1hPerMTok ?? pricing.inputPerMTok) +
    nonNegative(tokens.outputTokens) * pricing.outputPerMTok;
  return micro / 1e6;
}
