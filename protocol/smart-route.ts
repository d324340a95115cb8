import type { ResolvedModel } from './catalog.ts';
import type { EndpointFamily } from './families.ts';
import type { PresetView } from './http/presets.ts';
import type { RetryClass, RoutePackView, Strategy } from './http/route-packs.ts';

// Presets and route packs as their readers see them (control/presets and control/smart-route decide them):
// what a preset or pack can serve now, a pack's decision, and their synthetic entries of GET /v1/models.

export interface UsablePreset {
  preset: PresetView;
  target: ResolvedModel;
  /** The target's families within familyScope: what the synthetic model advertises and serves. */
  families: EndpointFamily[];
}

export interface UsablePack {
  pack: RoutePackView;
  families: EndpointFamily[];
}

export interface Candidate {
  routeId: string;
  model: string;
  modelId: string | null;
  providerId: string | null;
  weight: number;
  eligible: boolean;
  /** 1-based attempt position among eligible routes; null when not eligible or beyond maxAttempts. */
  attempt: number | null;
  reason: string;
}

export interface Attempt {
  routeId: string;
  target: ResolvedModel;
}

export interface Decision {
  slug: string;
  strategy: Strategy;
  family: EndpointFamily;
  maxAttempts: number;
  retryOn: RetryClass[];
  candidates: Candidate[];
  fallback: Candidate;
  attempts: Attempt[];
}

export interface SyntheticModel {
  id: string;
  displayName: string;
  /** Seconds since the epoch. */
  created: number;
  families: EndpointFamily[];
  /** Safe metadata, shown under `switchyard` in both list shapes. */
  meta: Record<string, unknown>;
}
