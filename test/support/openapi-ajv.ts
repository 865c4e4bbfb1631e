import { Ajv, type Format } from 'ajv';

/**
 * An ajv for OpenAPI schemas kept as data (KubeVirt's swagger, Neon's pageserver spec):
 * OpenAPI keywords it does not know are ignored, the integer formats only annotate, and a
 * `date-time` is RFC 3339 as both APIs write it; `formats` adds an API's own.
 */
export function openApiAjv(formats: Record<string, Format>): Ajv {
  return new Ajv({
    strict: false,
    allErrors: false,
    formats: {
      int32: true,
      int64: true,
      'date-time': (s: string) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(s),
      ...formats,
    },
  });
}
