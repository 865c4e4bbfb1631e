import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { matchesLabels, parseLabelSelector, SelectorError } from './labels.ts';
import { jsonPatch, mergePatch, PatchError, strategicMergePatch } from './patch.ts';
import { apiVersionOf, resourceKey, StoreError, type K8sObject, type ObjectStore, type ResourceDef, type StoreEvent } from './store.ts';

/** A Kubernetes API verb, as RBAC names it. */
export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete';

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

export interface RecordedCall {
  verb: Verb;
  group: string;
  resource: string;
}

export interface ApiServerOptions {
  /** Bearer token the client must send; requests without it get 401. */
  token: string;
  /** Username in 403 messages. */
  user: string;
  /** How often open watches that asked for bookmarks get one. */
  bookmarkIntervalMs: number;
}

interface Route {
  resource: ResourceDef;
  namespace: string | undefined;
  name: string | undefined;
}

function status(code: number, reason: string, message: string, details?: Record<string, unknown>) {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, ...(details && { details }), code };
}

/**
 * The HTTP side of the simulated API server: the REST paths of the served kinds, strict
 * like kube-apiserver where the client can tell (Status bodies, 404 for unknown kinds, 409 on
 * stale writes, 415 for unknown patch types, 410 for watches from a compacted version).
 */
export class ApiServer {
  readonly server: Server;
  /** Every call that reached authorization, for checking the ClusterRole against what the plugin does. */
  readonly calls: RecordedCall[] = [];
  /** When set, only these rules are allowed (RBAC); unset: everything is. */
  rules: PolicyRule[] | null = null;
  /** When set, every request answers this HTTP status (an API server in trouble) and open watches are cut. */
  private outage: number | null = null;
  /** Runs before each update or patch is applied (tests make a concurrent writer here). */
  beforeWrite: ((verb: 'update' | 'patch', resource: ResourceDef, namespace: string | undefined, name: string) => void) | null = null;
  private readonly sockets = new Set<Socket>();
  private readonly watches = new Set<() => void>();
  private port = 0;
  private listening = false;

  constructor(
    private readonly store: ObjectStore,
    private readonly options: ApiServerOptions,
  ) {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((e: unknown) => {
        if (!res.headersSent) this.send(res, 500, status(500, 'InternalError', String(e)));
        else res.destroy();
      });
    });
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(this.port, '127.0.0.1', resolve));
    this.listening = true;
    this.port = (this.server.address() as AddressInfo).port;
    return `http://127.0.0.1:${this.port}`;
  }

  /**
   * Unreachable (false): stops listening and cuts every open connection, so clients get
   * connection refused/reset with no HTTP status at all; reachable (true) listens again on
   * the same port (the kubeconfig stays valid).
   */
  async setReachable(reachable: boolean): Promise<void> {
    if (reachable === this.listening) return;
    if (reachable) {
      await this.listen();
      return;
    }
    this.listening = false;
    this.dropWatches();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const s of this.sockets) s.destroy();
    await closed;
  }

  setOutage(httpStatus: number | null): void {
    this.outage = httpStatus;
    if (httpStatus !== null) this.dropWatches();
  }

  /** Ends every open watch stream (the client sees its connection close and must resume). */
  dropWatches(): void {
    for (const end of [...this.watches]) end();
  }

  get openWatches(): number {
    return this.watches.size;
  }

  async close(): Promise<void> {
    this.dropWatches();
    this.listening = false;
    // Closing a server that is not listening (unreachable) calls back with an error: fine.
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const s of this.sockets) s.destroy();
    await closed;
  }

  private send(res: ServerResponse, code: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  }

  private route(path: string): Route | { error: ReturnType<typeof status> } {
    const parts = path.split('/').filter(Boolean);
    let group: string;
    let rest: string[];
    if (parts[0] === 'api' && parts[1] === 'v1') {
      group = '';
      rest = parts.slice(2);
    } else if (parts[0] === 'apis' && parts.length >= 3) {
      group = parts[1]!;
      rest = parts.slice(3);
    } else return { error: status(404, 'NotFound', 'the server could not find the requested resource') };
    const version = group ? parts[2]! : 'v1';
    let namespace: string | undefined;
    if (rest[0] === 'namespaces' && rest.length >= 3) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
    const [plural, name, sub] = rest;
    const resource = plural ? this.store.resource(group, plural) : undefined;
    if (!resource || resource.version !== version || sub !== undefined || (namespace !== undefined && !resource.namespaced)) {
      return { error: status(404, 'NotFound', 'the server could not find the requested resource') };
    }
    return { resource, namespace, name };
  }

  private forbidden(verb: Verb, route: Route): ReturnType<typeof status> | null {
    const { resource, namespace, name } = route;
    this.calls.push({ verb, group: resource.group, resource: resource.plural });
    if (!this.rules) return null;
    const allowed = this.rules.some(
      (rule) =>
        (rule.apiGroups.includes('*') || rule.apiGroups.includes(resource.group)) &&
        (rule.resources.includes('*') || rule.resources.includes(resource.plural)) &&
        (rule.verbs.includes('*') || rule.verbs.includes(verb)),
    );
    if (allowed) return null;
    const scope = namespace ? `in the namespace "${namespace}"` : 'at the cluster scope';
    const what = name ? `${resourceKey(resource)} "${name}"` : resourceKey(resource);
    return status(
      403,
      'Forbidden',
      `${what} is forbidden: User "${this.options.user}" cannot ${verb} resource "${resource.plural}" in API group "${resource.group}" ${scope}`,
      { ...(name && { name }), group: resource.group, kind: resource.plural },
    );
  }

  private async body(req: IncomingMessage): Promise<unknown> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    return text ? JSON.parse(text) : undefined;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (this.outage !== null) {
      return this.send(res, this.outage, status(this.outage, 'ServiceUnavailable', 'the server is currently unable to handle the request'));
    }
    if (req.headers.authorization !== `Bearer ${this.options.token}`) {
      return this.send(res, 401, status(401, 'Unauthorized', 'Unauthorized'));
    }
    const url = new URL(req.url ?? '/', 'http://sim');
    const route = this.route(url.pathname);
    if ('error' in route) return this.send(res, 404, route.error);
    const { resource, namespace, name } = route;
    const method = req.method ?? 'GET';
    const verb: Verb | null =
      method === 'GET'
        ? name
          ? 'get'
          : url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1'
            ? 'watch'
            : 'list'
        : method === 'POST' && !name
          ? 'create'
          : method === 'PUT' && name
            ? 'update'
            : method === 'PATCH' && name
              ? 'patch'
              : method === 'DELETE' && name
                ? 'delete'
                : null;
    if (!verb) return this.send(res, 405, status(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource`));
    const denied = this.forbidden(verb, route);
    if (denied) return this.send(res, 403, denied);

    try {
      switch (verb) {
        case 'get':
          return this.send(res, 200, this.store.require(resource, namespace, name!));
        case 'list': {
          const selector = parseLabelSelector(url.searchParams.get('labelSelector'));
          const items = this.store.list(resource, namespace).filter((o) => matchesLabels(o.metadata.labels, selector));
          return this.send(res, 200, {
            kind: `${resource.kind}List`,
            apiVersion: apiVersionOf(resource),
            metadata: { resourceVersion: String(this.store.currentRv) },
            items,
          });
        }
        case 'watch':
          return this.watch(req, res, resource, namespace, url.searchParams);
        case 'create': {
          const input = (await this.body(req)) as K8sObject;
          if (!input || typeof input !== 'object' || !input.metadata)
            return this.send(res, 400, status(400, 'BadRequest', 'the body must be an object with metadata'));
          if (resource.namespaced) {
            if (input.metadata.namespace && input.metadata.namespace !== namespace) {
              return this.send(res, 400, status(400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request'));
            }
            input.metadata.namespace = namespace;
          }
          return this.send(res, 201, this.store.create(resource, input));
        }
        case 'update': {
          const input = (await this.body(req)) as K8sObject;
          if (!input?.metadata?.resourceVersion) {
            return this.send(
              res,
              422,
              status(
                422,
                'Invalid',
                `${resourceKey(resource)} "${name}" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update`,
              ),
            );
          }
          if (input.metadata.name !== name) return this.send(res, 400, status(400, 'BadRequest', 'the name of the object does not match the name on the URL'));
          input.metadata.namespace = namespace;
          this.beforeWrite?.('update', resource, namespace, name!);
          const out = this.store.update(resource, input, { expectRv: input.metadata.resourceVersion, keepStatus: resource.statusSubresource });
          return this.send(res, 200, out);
        }
        case 'patch':
          return await this.patch(req, res, resource, namespace, name!);
        case 'delete': {
          this.store.delete(resource, namespace, name!);
          return this.send(res, 200, {
            kind: 'Status',
            apiVersion: 'v1',
            metadata: {},
            status: 'Success',
            details: { name, group: resource.group, kind: resource.plural },
          });
        }
      }
    } catch (e) {
      if (e instanceof StoreError)
        return this.send(res, e.code, status(e.code, e.reason, e.message, { ...(name && { name }), group: resource.group, kind: resource.plural }));
      if (e instanceof SelectorError) return this.send(res, 400, status(400, 'BadRequest', e.message));
      if (e instanceof SyntaxError) return this.send(res, 400, status(400, 'BadRequest', `invalid JSON: ${e.message}`));
      throw e;
    }
  }

  private async patch(req: IncomingMessage, res: ServerResponse, resource: ResourceDef, namespace: string | undefined, name: string): Promise<void> {
    const contentType = (req.headers['content-type'] ?? '').split(';')[0]!.trim();
    this.beforeWrite?.('patch', resource, namespace, name);
    const current = this.store.require(resource, namespace, name);
    const patch = await this.body(req);
    let next: K8sObject;
    try {
      if (contentType === 'application/merge-patch+json') next = mergePatch(current, patch) as K8sObject;
      else if (contentType === 'application/json-patch+json') next = jsonPatch(current, patch) as K8sObject;
      else if (contentType === 'application/strategic-merge-patch+json' && resource.strategicMerge) next = strategicMergePatch(current, patch) as K8sObject;
      else {
        return this.send(
          res,
          415,
          status(
            415,
            'UnsupportedMediaType',
            `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json${resource.strategicMerge ? ', application/strategic-merge-patch+json' : ''}`,
          ),
        );
      }
    } catch (e) {
      if (e instanceof PatchError) return this.send(res, 422, status(422, 'Invalid', e.message));
      throw e;
    }
    // A patch that sets metadata.resourceVersion is a precondition (optimistic concurrency), as in kube-apiserver.
    const expectRv = next.metadata?.resourceVersion;
    next.metadata = { ...next.metadata, name, ...(namespace && { namespace }) };
    const out = this.store.update(resource, next, { expectRv, keepStatus: resource.statusSubresource });
    this.send(res, 200, out);
  }

  private watch(req: IncomingMessage, res: ServerResponse, resource: ResourceDef, namespace: string | undefined, params: URLSearchParams): void {
    const selector = parseLabelSelector(params.get('labelSelector'));
    const rvParam = params.get('resourceVersion');
    const bookmarks = params.get('allowWatchBookmarks') === 'true';
    const timeoutSeconds = Number(params.get('timeoutSeconds') ?? '0');
    const inScope = (o: K8sObject) => (namespace === undefined || o.metadata.namespace === namespace) && matchesLabels(o.metadata.labels, selector);

    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    const write = (type: string, object: unknown) => res.write(`${JSON.stringify({ type, object })}\n`);

    let initial: { type: string; object: K8sObject }[];
    if (!rvParam || rvParam === '0') {
      // "Any version": synthetic ADDED events for what exists now, then changes.
      initial = this.store
        .list(resource, namespace)
        .filter(inScope)
        .map((object) => ({ type: 'ADDED', object }));
    } else {
      const since = this.store.eventsSince(resource, Number(rvParam));
      if (!since) {
        write('ERROR', status(410, 'Expired', `too old resource version: ${rvParam} (${this.store.oldestResumableRv})`));
        res.end();
        return;
      }
      initial = since.filter((e) => inScope(e.object)).map((e) => ({ type: e.type, object: e.object }));
    }
    for (const e of initial) write(e.type, e.object);

    const unsubscribe = this.store.subscribe((e: StoreEvent) => {
      if (e.resource === resource && inScope(e.object)) write(e.type, e.object);
    });
    const bookmarkTimer = bookmarks
      ? setInterval(
          () => write('BOOKMARK', { kind: resource.kind, apiVersion: apiVersionOf(resource), metadata: { resourceVersion: String(this.store.currentRv) } }),
          this.options.bookmarkIntervalMs,
        )
      : null;
    const timeoutTimer = timeoutSeconds > 0 ? setTimeout(() => end(), timeoutSeconds * 1000) : null;
    const end = () => {
      unsubscribe();
      if (bookmarkTimer) clearInterval(bookmarkTimer);
      if (timeoutTimer) clearTimeout(timeoutTimer);
      this.watches.delete(end);
      if (!res.writableEnded) res.end();
    };
    this.watches.add(end);
    req.on('close', end);
  }
}
