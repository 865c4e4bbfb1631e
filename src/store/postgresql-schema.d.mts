/** The PostgreSQL variant of prisma/schema.prisma's text (see postgresql-schema.mjs). */
export function postgresSchemaText(sqliteSchema: string): string;
/** Writes src/store/prisma-postgresql/schema.prisma under `root` and returns its path. */
export function writePostgresSchema(root: string): string;
