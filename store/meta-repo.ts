import type { StoreEnv } from './env.ts';

/** Small facts about the installation itself. */
export interface MetaRepo {
  bootstrapTokenId(): string | undefined;
  stageBootstrapTokenId(id: string | null): void;
}

export function metaRepo(env: StoreEnv): MetaRepo {
  const db = env.db<string>('meta');
  return {
    bootstrapTokenId: () => db.get('bootstrapTokenId'),
    stageBootstrapTokenId: (id) => void (id === null ? db.remove('bootstrapTokenId') : db.put('bootstrapTokenId', id)),
  };
}
