// Module-loading hooks (node:module register): appends the URL of every ES module (and of
// every CommonJS entry imported from one) that the process loads to the file it is given.
import { appendFileSync } from 'node:fs';

let file;

export function initialize(data) {
  file = data.file;
}

export async function load(url, context, next) {
  appendFileSync(file, `${url}\n`);
  return next(url, context);
}
