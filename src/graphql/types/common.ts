import { offsetForArgs, offsetToCursor, resolveArrayConnection } from '@pothos/plugin-relay';
import type { Page, PagePicker } from '../../cluster/backend.ts';
import { builder, PAGE } from '../builder.ts';

export interface KeyValue {
  key: string;
  value: string;
}

export const LabelType = builder.objectRef<KeyValue>('Label').implement({
  fields: (t) => ({ key: t.exposeString('key'), value: t.exposeString('value') }),
});

export const toLabels = (labels: Record<string, string>): KeyValue[] =>
  Object.entries(labels)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, value]) => ({ key, value }));

/** `RerunOnFailure` → `RERUN_ON_FAILURE`: GraphQL enum names for backend spellings. */
function screamingCase(value: string): string {
  return value
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/[-\s]/g, '_')
    .toUpperCase();
}

/** Enum values whose GraphQL names are SCREAMING_CASE and whose internal values keep the backend spelling. */
export function enumValuesOf<const T extends readonly string[]>(values: T): Record<string, { value: T[number] }> {
  return Object.fromEntries(values.map((v) => [screamingCase(v), { value: v }]));
}

type PageArgs = { first?: number | null; last?: number | null; before?: string | null; after?: string | null };

/** One page of an in-memory list, with the count of all rows that matched. */
export function pageOf<T>(args: PageArgs, rows: T[]) {
  return { ...resolveArrayConnection({ args, defaultSize: PAGE.defaultSize, maxSize: PAGE.maxSize }, rows), totalCount: rows.length };
}

/**
 * One page read from a backend that pages itself (`pageVms`, `pageShards`): the same
 * offsets and cursors as `pageOf`, without listing every row (issue 15).
 */
export async function pageFrom<T>(args: PageArgs, read: (page: PagePicker) => Promise<Page<T>>) {
  let picked: ReturnType<typeof offsetForArgs> | undefined;
  const { rows, totalCount } = await read((totalCount) => {
    picked = offsetForArgs({ args, totalCount, defaultSize: PAGE.defaultSize, maxSize: PAGE.maxSize });
    return { offset: picked.offset, limit: picked.limit };
  });
  if (!picked) throw new Error('the backend answered a page without asking which');
  const { offset, expectedSize, hasPreviousPage, hasNextPage } = picked;
  const edges = rows.slice(0, expectedSize).map((node, i) => ({ cursor: offsetToCursor(offset + i), node }));
  return {
    edges,
    totalCount,
    pageInfo: {
      startCursor: offsetToCursor(offset),
      endCursor: offsetToCursor(offset + edges.length - 1),
      hasPreviousPage,
      hasNextPage: hasNextPage(rows.length),
    },
  };
}
