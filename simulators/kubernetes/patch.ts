/** The patch formats a Kubernetes API server accepts: JSON merge patch (RFC 7386), JSON patch (RFC 6902), strategic merge patch. */

export class PatchError extends Error {}

type Json = unknown;
const isObject = (v: Json): v is Record<string, Json> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** RFC 7386: objects merge recursively, null deletes, anything else (arrays too) replaces. */
export function mergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) return structuredClone(patch);
  const out: Record<string, Json> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

/**
 * Strategic merge patch, as far as the simulated kinds need: like a merge patch, plus
 * `$patch: delete` / `$patch: replace` directives on maps. Lists replace (the merge keys of
 * core types are not modelled); the server refuses it for custom resources, as Kubernetes does.
 */
export function strategicMergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) return structuredClone(patch);
  if (patch['$patch'] === 'delete') return undefined;
  if (patch['$patch'] === 'replace') {
    const { $patch: _, ...rest } = patch;
    return structuredClone(rest);
  }
  const out: Record<string, Json> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith('$')) continue;
    if (value === null) delete out[key];
    else {
      const merged = strategicMergePatch(out[key], value);
      if (merged === undefined) delete out[key];
      else out[key] = merged;
    }
  }
  return out;
}

interface Operation {
  op: string;
  path: string;
  value?: Json;
  from?: string;
}

function parsePointer(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw new PatchError(`invalid JSON pointer ${JSON.stringify(pointer)}`);
  return pointer
    .slice(1)
    .split('/')
    .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function parentOf(doc: Json, tokens: string[]): { parent: Json; key: string } {
  let node = doc;
  for (const t of tokens.slice(0, -1)) {
    if (Array.isArray(node)) node = node[Number(t)];
    else if (isObject(node)) node = node[t];
    else node = undefined;
    if (node === undefined) throw new PatchError(`path /${tokens.join('/')} does not exist`);
  }
  return { parent: node, key: tokens[tokens.length - 1]! };
}

function get(doc: Json, tokens: string[]): Json {
  let node = doc;
  for (const t of tokens) {
    if (Array.isArray(node)) node = node[Number(t)];
    else if (isObject(node)) node = Object.hasOwn(node, t) ? node[t] : undefined;
    else return undefined;
  }
  return node;
}

function remove(doc: Json, tokens: string[]): Json {
  const { parent, key } = parentOf(doc, tokens);
  if (Array.isArray(parent)) {
    const i = Number(key);
    if (!(i >= 0 && i < parent.length)) throw new PatchError(`index ${key} out of range`);
    return parent.splice(i, 1)[0];
  }
  if (!isObject(parent) || !Object.hasOwn(parent, key)) throw new PatchError(`path /${tokens.join('/')} does not exist`);
  const value = parent[key];
  delete parent[key];
  return value;
}

function add(doc: Json, tokens: string[], value: Json): Json {
  if (tokens.length === 0) return value;
  const { parent, key } = parentOf(doc, tokens);
  if (Array.isArray(parent)) {
    const i = key === '-' ? parent.length : Number(key);
    if (!(i >= 0 && i <= parent.length)) throw new PatchError(`index ${key} out of range`);
    parent.splice(i, 0, value);
  } else if (isObject(parent)) parent[key] = value;
  else throw new PatchError(`cannot add at /${tokens.join('/')}`);
  return doc;
}

/** RFC 6902 add, remove, replace, move, copy, test; all or nothing. */
export function jsonPatch(target: Json, ops: Json): Json {
  if (!Array.isArray(ops)) throw new PatchError('a JSON patch must be an array of operations');
  let doc = structuredClone(target);
  for (const raw of ops as Operation[]) {
    const tokens = parsePointer(raw.path);
    switch (raw.op) {
      case 'add':
        doc = add(doc, tokens, structuredClone(raw.value));
        break;
      case 'remove':
        remove(doc, tokens);
        break;
      case 'replace':
        if (tokens.length === 0) doc = structuredClone(raw.value);
        else {
          remove(doc, tokens);
          doc = add(doc, tokens, structuredClone(raw.value));
        }
        break;
      case 'move': {
        const value = remove(doc, parsePointer(raw.from ?? ''));
        doc = add(doc, tokens, value);
        break;
      }
      case 'copy':
        doc = add(doc, tokens, structuredClone(get(doc, parsePointer(raw.from ?? ''))));
        break;
      case 'test':
        if (JSON.stringify(get(doc, tokens)) !== JSON.stringify(raw.value)) throw new PatchError(`test operation failed at ${raw.path}`);
        break;
      default:
        throw new PatchError(`unknown JSON patch operation ${JSON.stringify(raw.op)}`);
    }
  }
  return doc;
}
