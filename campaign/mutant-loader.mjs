/** `node --import ./campaign/mutant-loader.mjs` with LOCKKEEPER_CAMPAIGN_MUTANT=<name>: loads the gateway with that seeded mutant (mutant-hooks.mjs). */
import { register } from 'node:module';

register('./mutant-hooks.mjs', import.meta.url, { data: { name: process.env.LOCKKEEPER_CAMPAIGN_MUTANT } });
