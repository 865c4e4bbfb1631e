import { writeFileSync } from 'node:fs';
import { printSchemaFile, SCHEMA_FILE } from '../src/graphql/print.ts';

writeFileSync(SCHEMA_FILE, printSchemaFile());
process.stdout.write(`wrote ${SCHEMA_FILE}\n`);
