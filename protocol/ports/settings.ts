import type { Actor } from '../actor.ts';
import type { SettingsPatch, SettingsView } from '../http/settings.ts';

// The settings as the edge reaches them.

export interface SettingsPort {
  view(): SettingsView | Promise<SettingsView>;
  patch(patch: SettingsPatch, actor: Actor, requestId: string): Promise<SettingsView>;
}
