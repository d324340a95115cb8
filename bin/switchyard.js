#!/usr/bin/env node
// The package's executable: registers the TypeScript loader, then runs the CLI.
import { register } from 'tsx/esm/api';

register();
await import('../edge/cli.ts');
