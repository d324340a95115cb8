import type { Actor } from '../actor.ts';
import type { SettingsPatch, SettingsView } from '../http/settings.ts';
import { methodsOf } from './methods.ts';

// The settings as the edge reaches them.

export interface SettingsPort {
  view(): SettingsView | Promise<SettingsView>;
  patch(patch: SettingsPatch, actor: Actor, requestId: string): Promise<SettingsView>;
}

export const SETTINGS_METHODS = methodsOf<SettingsPort>()(['view', 'patch']);
