// `node --import <this file>`: records every module the process loads into
// $LOCKKEEPER_MODULE_LOG, one URL a line — ES modules through the loader hooks (they run
// in their own thread), CommonJS files as require() loads them.
import { appendFileSync } from 'node:fs';
import Module, { register } from 'node:module';
import { pathToFileURL } from 'node:url';

const file = process.env.LOCKKEEPER_MODULE_LOG;
if (!file) throw new Error('LOCKKEEPER_MODULE_LOG names no file');
register('./hooks.mjs', import.meta.url, { data: { file } });
const load = Module.prototype.load;
Module.prototype.load = function (filename) {
  appendFileSync(file, `${pathToFileURL(filename).href}\n`);
  return load.call(this, filename);
};
