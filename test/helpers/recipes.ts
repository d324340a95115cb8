import { readFileSync } from 'node:fs';

// The README's "First call" recipes, read from the README itself so that what people copy is what runs:
// test/integration/first-call.test.ts runs the SDK and curl ones, test/agents/check-agents.ts the agents'.

export interface Recipe {
  lang: string;
  code: string;
}

/** The recipes by name: a fenced block right after `<!-- recipe: name -->`. */
export function readRecipes(text = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')) {
  const recipes = new Map<string, Recipe>();
  for (const m of text.matchAll(/<!-- recipe: ([\w-]+) -->\n```(\w+)\n([\s\S]*?)\n```/g))
    recipes.set(m[1]!, { lang: m[2]!, code: m[3]! });
  return recipes;
}

/** A recipe's code for a service on `url` instead of the default address. */
export const at = (recipe: Recipe, url: string) => recipe.code.replaceAll('http://127.0.0.1:3939', url);
