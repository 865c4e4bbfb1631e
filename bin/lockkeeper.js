#!/usr/bin/env node
// Node 20 cannot run TypeScript itself: register tsx's loader, then run the CLI source.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');
