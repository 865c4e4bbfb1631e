import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { SimClock } from './clock.ts';
import { matchesFields, parseFieldSelector } from './fields.ts';
import { matchesLabels, parseLabelSelector, SelectorError } from './labels.ts';
import { jsonPatch, mergePatch, PatchError, strategicMergePatch } from './patch.ts';
import { apiVersionOf, resourceKey, StoreError, type K8sObject, type ObjectStore, type ResourceDef, type StoreEvent } from './store.ts';

/** A Kubernetes API verb, as RBAC names it. */
export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete';

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  /** Only these objects (by name): a request naming no object, or another, is not allowed by this rule. */
  resourceNames?: string[];
}

export interface RecordedCall {
  verb: Verb;
  group: string;
  /** As RBAC names it: `pods`, or `pods/eviction` for a subresource. */
  resource: string;
  namespace?: string;
  name?: string;
  /** The request body of a write (create, update, patch, delete options). */
  body?: unknown;
  /** The simulator's clock when the call arrived. */
  at: number;
  /** Who sent it, as its `x-lockkeeper-sender` header says (a gateway replica: `holder@epoch`), when it says. */
  sender?: string;
}

/** One request and its answer, for checking shapes against outside schemas (test/support). */
export interface Exchange {
  verb: Verb;
  resource: ResourceDef;
  subresource: string | undefined;
  request: unknown;
  code: number;
  response: unknown;
}

export interface ApiServerOptions {
  /** Bearer token the client must send; requests without it get 401. */
  token: string;
  /** Username in 403 messages. */
  user: string;
  /** How often open watches that asked for bookmarks get one. */
  bookmarkIntervalMs: number;
  clock: SimClock;
  /** Serve HTTPS with this key and certificate (PEM): clients that send a bearer token only over TLS, e.g. kubectl. */
  tls?: { key: string; cert: string };
}

interface Route {
  resource: ResourceDef;
  namespace: string | undefined;
  name: string | undefined;
  sub: string | undefined;
}

export function status(code: number, reason: string, message: string, details?: Record<string, unknown>) {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, ...(details && { details }), code };
}

/** A refusal of an admission webhook or subresource handler: answered as a Status with this code. */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

/** What an admission plugin sees; it may change `object` (mutating) or throw ApiError (validating). */
export interface AdmissionRequest {
  verb: 'create' | 'update' | 'patch' | 'delete';
  resource: ResourceDef;
  namespace: string | undefined;
  name: string | undefined;
  object: K8sObject | null;
  oldObject: K8sObject | null;
}

/** A subresource served by a handler (e.g. `pods/eviction`): answers a status code and a body. */
/** `dryRun`: the request asked `dryRun=All`: every check runs, nothing is changed (kube-apiserver's server-side dry run). */
export type SubresourceHandler = (r: { verb: Verb; namespace: string | undefined; name: string; body: unknown; dryRun: boolean }) => {
  code: number;
  body: unknown;
};

/** A DELETE the owning controller handles (e.g. pods: graceful termination). */
export type DeleteHandler = (namespace: string | undefined, name: string, gracePeriodSeconds: number | undefined) => K8sObject;

/**
 * The HTTP side of the simulated API server: the REST paths of the served kinds, strict
 * like kube-apiserver where the client can tell (Status bodies, 404 for unknown kinds and
 * subresources, 409 on stale writes, 415 for unknown patch types, 410 for watches from a
 * compacted version, 400 for unknown field selectors).
 */
/** `GET` here (with the token) answers `{ items: RecordedCall[] }`: every call so far, in order (not a Kubernetes path). */
export const CALLS_PATH = '/simulator/v1/calls';

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
  /** Sees every answered request (tests validate shapes here). */
  onExchange: ((x: Exchange) => void) | null = null;
  /** Admission plugins (KubeVirt's webhooks), run on writes in order. */
  readonly admitters: ((a: AdmissionRequest) => void)[] = [];
  readonly subresources = new Map<string, SubresourceHandler>();
  readonly deleteHandlers = new Map<string, DeleteHandler>();
  private readonly sockets = new Set<Socket>();
  private readonly watches = new Set<() => void>();
  private port = 0;
  private listening = false;

  constructor(
    private readonly store: ObjectStore,
    private readonly options: ApiServerOptions,
  ) {
    const handler = (req: IncomingMessage, res: ServerResponse) => {
      this.handle(req, res).catch((e: unknown) => {
        if (!res.headersSent) this.send(res, 500, status(500, 'InternalError', String(e)));
        else res.destroy();
      });
    };
    this.server = options.tls ? createTlsServer({ key: options.tls.key, cert: options.tls.cert }, handler) : createServer(handler);
    this.server.on(options.tls ? 'secureConnection' : 'connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(this.port, '127.0.0.1', resolve));
    this.listening = true;
    this.port = (this.server.address() as AddressInfo).port;
    return `${this.options.tls ? 'https' : 'http'}://127.0.0.1:${this.port}`;
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

  /** Which version `pods/eviction` is discovered in (k8s:K5: a client uses policy/v1beta1 only when v1 is not listed). */
  evictionVersion: 'v1' | 'v1beta1' = 'v1';

  /** `GET /api/v1`: the core group's resources and subresources, as discovery lists them. */
  private discovery(): unknown {
    const resources = this.store.resources
      .filter((r) => r.group === '')
      .flatMap((r) => [
        {
          name: r.plural,
          singularName: r.kind.toLowerCase(),
          namespaced: r.namespaced,
          kind: r.kind,
          verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
        },
        ...(r.subresources ?? []).map((sub) =>
          sub === 'eviction'
            ? {
                name: `${r.plural}/eviction`,
                singularName: '',
                namespaced: true,
                group: 'policy',
                version: this.evictionVersion,
                kind: 'Eviction',
                verbs: ['create'],
              }
            : { name: `${r.plural}/${sub}`, singularName: '', namespaced: r.namespaced, kind: r.kind, verbs: ['get', 'patch', 'update'] },
        ),
      ]);
    return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: 'v1', resources };
  }

  /**
   * `GET /api`, `/apis` and `/apis/<group>/<version>`: the legacy discovery documents kubectl
   * reads before anything else (it falls back to them when the answer is not aggregated).
   */
  private groupDiscovery(path: string): unknown {
    if (path === '/api')
      return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: `127.0.0.1:${this.port}` }] };
    const groups = new Map<string, ResourceDef[]>();
    for (const r of this.store.resources) if (r.group) groups.set(`${r.group}/${r.version}`, [...(groups.get(`${r.group}/${r.version}`) ?? []), r]);
    if (path === '/apis') {
      return {
        kind: 'APIGroupList',
        apiVersion: 'v1',
        groups: [...groups.keys()].map((gv) => {
          const [name, version] = gv.split('/') as [string, string];
          return { name, versions: [{ groupVersion: gv, version }], preferredVersion: { groupVersion: gv, version } };
        }),
      };
    }
    const gv = path.replace(/^\/apis\//, '');
    const resources = groups.get(gv);
    if (!resources) return null;
    return {
      kind: 'APIResourceList',
      apiVersion: 'v1',
      groupVersion: gv,
      resources: resources.flatMap((r) => [
        {
          name: r.plural,
          singularName: r.kind.toLowerCase(),
          namespaced: r.namespaced,
          kind: r.kind,
          verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
        },
        ...(r.statusSubresource
          ? [{ name: `${r.plural}/status`, singularName: '', namespaced: r.namespaced, kind: r.kind, verbs: ['get', 'patch', 'update'] }]
          : []),
      ]),
    };
  }

  /** Runs the admission plugins, as the API server does before it stores a write. */
  admit(a: AdmissionRequest): void {
    for (const admitter of this.admitters) admitter(a);
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
    const [plural, name, sub, ...more] = rest;
    const resource = plural ? this.store.resource(group, plural) : undefined;
    const subOk = sub === undefined || (resource?.subresources ?? []).includes(sub);
    if (!resource || resource.version !== version || !subOk || more.length || (namespace !== undefined && !resource.namespaced)) {
      return { error: status(404, 'NotFound', 'the server could not find the requested resource') };
    }
    return { resource, namespace, name, sub };
  }

  private forbidden(verb: Verb, route: Route, body: unknown, sender: string | undefined): ReturnType<typeof status> | null {
    const { resource, namespace, name, sub } = route;
    const rbacResource = sub ? `${resource.plural}/${sub}` : resource.plural;
    this.calls.push({
      verb,
      group: resource.group,
      resource: rbacResource,
      ...(namespace && { namespace }),
      ...(name && { name }),
      ...(body !== undefined && { body }),
      at: this.options.clock.now(),
      ...(sender && { sender }),
    });
    if (!this.rules) return null;
    const allowed = this.rules.some(
      (rule) =>
        (rule.apiGroups.includes('*') || rule.apiGroups.includes(resource.group)) &&
        (rule.resources.includes('*') || rule.resources.includes(rbacResource)) &&
        (rule.verbs.includes('*') || rule.verbs.includes(verb)) &&
        (rule.resourceNames === undefined || (name !== undefined && rule.resourceNames.includes(name))),
    );
    if (allowed) return null;
    const scope = namespace ? `in the namespace "${namespace}"` : 'at the cluster scope';
    const what = name ? `${resourceKey(resource)} "${name}"` : resourceKey(resource);
    return status(
      403,
      'Forbidden',
      `${what} is forbidden: User "${this.options.user}" cannot ${verb} resource "${rbacResource}" in API group "${resource.group}" ${scope}`,
      { ...(name && { name }), group: resource.group, kind: resource.plural },
    );
  }

  private async body(req: IncomingMessage): Promise<unknown> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    return text ? JSON.parse(text) : undefined;
  }

  private verbOf(method: string, route: Route, params: URLSearchParams): Verb | null {
    const { name, sub } = route;
    if (sub) {
      // A subresource takes the verbs of its object: eviction is a create, status a get/update/patch.
      if (method === 'POST') return 'create';
      if (method === 'GET') return 'get';
      if (method === 'PUT') return 'update';
      if (method === 'PATCH') return 'patch';
      return null;
    }
    if (method === 'GET') return name ? 'get' : params.get('watch') === 'true' || params.get('watch') === '1' ? 'watch' : 'list';
    if (method === 'POST' && !name) return 'create';
    if (method === 'PUT' && name) return 'update';
    if (method === 'PATCH' && name) return 'patch';
    if (method === 'DELETE' && name) return 'delete';
    return null;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (this.outage !== null) {
      return this.send(res, this.outage, status(this.outage, 'ServiceUnavailable', 'the server is currently unable to handle the request'));
    }
    if (req.headers.authorization !== `Bearer ${this.options.token}`) {
      return this.send(res, 401, status(401, 'Unauthorized', 'Unauthorized'));
    }
    const url = new URL(req.url ?? '/', 'http://sim');
    const bare = url.pathname.replace(/\/$/, '');
    if (bare === '/api/v1' && req.method === 'GET') return this.send(res, 200, this.discovery());
    if (req.method === 'GET' && (bare === '/api' || bare === '/apis' || /^\/apis\/[^/]+\/[^/]+$/.test(bare))) {
      const document = this.groupDiscovery(bare);
      if (document) return this.send(res, 200, document);
    }
    // Not Kubernetes: the simulator's record of the calls, in arrival order, for tests in another process.
    if (url.pathname === CALLS_PATH && req.method === 'GET') return this.send(res, 200, { items: this.calls });
    const route = this.route(url.pathname);
    if ('error' in route) return this.send(res, 404, route.error);
    const method = req.method ?? 'GET';
    const verb = this.verbOf(method, route, url.searchParams);
    if (!verb) return this.send(res, 405, status(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource`));
    let body: unknown;
    try {
      body = method === 'GET' ? undefined : await this.body(req);
    } catch (e) {
      return this.send(res, 400, status(400, 'BadRequest', `invalid JSON: ${(e as Error).message}`));
    }
    const sender = req.headers['x-lockkeeper-sender'];
    const denied = this.forbidden(verb, route, body, typeof sender === 'string' ? sender : undefined);
    if (denied) return this.send(res, 403, denied);
    if (verb === 'watch') {
      try {
        return this.watch(req, res, route.resource, route.namespace, url.searchParams);
      } catch (e) {
        if (e instanceof SelectorError) return this.send(res, 400, status(400, 'BadRequest', e.message));
        throw e;
      }
    }
    const { code, out } = this.answer(verb, route, body, url.searchParams, req.headers['content-type'] ?? '');
    this.onExchange?.({ verb, resource: route.resource, subresource: route.sub, request: body, code, response: out });
    this.send(res, code, out);
  }

  private answer(verb: Verb, route: Route, body: unknown, params: URLSearchParams, contentType: string): { code: number; out: unknown } {
    const { resource, namespace, name, sub } = route;
    const fail = (code: number, reason: string, message: string, details?: Record<string, unknown>) => ({ code, out: status(code, reason, message, details) });
    // Server-side dry run (kubectl --dry-run=server): admission and checks run, nothing is stored.
    const dryRunValues = params.getAll('dryRun');
    if (dryRunValues.some((v) => v !== 'All')) return fail(400, 'BadRequest', `Invalid dry run value: ${dryRunValues.join(',')} (supported: All)`);
    const dryRun = dryRunValues.length > 0;
    try {
      if (sub && sub !== 'status') {
        const handler = this.subresources.get(`${resourceKey(resource)}/${sub}`);
        if (!handler) return fail(404, 'NotFound', 'the server could not find the requested resource');
        const answer = handler({ verb, namespace, name: name!, body, dryRun });
        return { code: answer.code, out: answer.body };
      }
      switch (verb) {
        case 'get':
          return { code: 200, out: this.store.require(resource, namespace, name!) };
        case 'list': {
          const selector = parseLabelSelector(params.get('labelSelector'));
          const fields = parseFieldSelector(params.get('fieldSelector'), resource);
          const items = this.store.list(resource, namespace).filter((o) => matchesLabels(o.metadata.labels, selector) && matchesFields(o, fields));
          return {
            code: 200,
            out: { kind: `${resource.kind}List`, apiVersion: apiVersionOf(resource), metadata: { resourceVersion: String(this.store.currentRv) }, items },
          };
        }
        case 'create': {
          const input = body as K8sObject;
          if (!input || typeof input !== 'object' || !input.metadata) return fail(400, 'BadRequest', 'the body must be an object with metadata');
          if (resource.namespaced) {
            if (input.metadata.namespace && input.metadata.namespace !== namespace) {
              return fail(400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request');
            }
            input.metadata.namespace = namespace;
          }
          this.admit({ verb: 'create', resource, namespace, name: input.metadata.name, object: input, oldObject: null });
          if (dryRun) return { code: 201, out: input };
          return { code: 201, out: this.store.create(resource, input) };
        }
        case 'update': {
          const input = body as K8sObject;
          if (!input?.metadata?.resourceVersion) {
            return fail(
              422,
              'Invalid',
              `${resourceKey(resource)} "${name}" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update`,
            );
          }
          if (input.metadata.name !== name) return fail(400, 'BadRequest', 'the name of the object does not match the name on the URL');
          input.metadata.namespace = namespace;
          this.beforeWrite?.('update', resource, namespace, name!);
          const current = this.store.require(resource, namespace, name!);
          const next =
            sub === 'status' ? { ...current, status: input.status, metadata: { ...current.metadata, resourceVersion: input.metadata.resourceVersion } } : input;
          this.admit({ verb: 'update', resource, namespace, name, object: next, oldObject: current });
          if (dryRun) return { code: 200, out: next };
          return { code: 200, out: this.write(resource, next, current, sub, input.metadata.resourceVersion) };
        }
        case 'patch':
          return this.patch(resource, namespace, name!, sub, body, contentType, dryRun);
        case 'delete': {
          const grace = deleteGrace(body, params);
          const handler = this.deleteHandlers.get(resourceKey(resource));
          const current = this.store.require(resource, namespace, name!);
          this.admit({ verb: 'delete', resource, namespace, name, object: null, oldObject: current });
          if (dryRun) return { code: 200, out: current };
          const gone = handler ? handler(namespace, name!, grace) : this.store.requestDelete(resource, namespace, name!, this.options.clock.now());
          // An object kept by its finalizers (or a pod's grace) is answered as the object; one gone at once as a Status.
          if (gone.metadata.deletionTimestamp && this.store.get(resource, namespace, name!)) return { code: 200, out: gone };
          return {
            code: 200,
            out: {
              kind: 'Status',
              apiVersion: 'v1',
              metadata: {},
              status: 'Success',
              details: { name, group: resource.group, kind: resource.plural, uid: gone.metadata.uid },
            },
          };
        }
        case 'watch':
          return fail(405, 'MethodNotAllowed', 'watch');
      }
    } catch (e) {
      if (e instanceof StoreError) return fail(e.code, e.reason, e.message, { ...(name && { name }), group: resource.group, kind: resource.plural });
      if (e instanceof ApiError) return fail(e.code, e.reason, e.message, e.details);
      if (e instanceof SelectorError) return fail(400, 'BadRequest', e.message);
      if (e instanceof PatchError) return fail(422, 'Invalid', e.message);
      throw e;
    }
  }

  /**
   * The main endpoint of a kind with a status subresource keeps the stored status; the
   * status subresource changes only the status.
   */
  private write(resource: ResourceDef, next: K8sObject, current: K8sObject, sub: string | undefined, expectRv: string | undefined): K8sObject {
    if (sub === 'status') {
      const merged = { ...current, status: next.status, metadata: { ...current.metadata, ...(expectRv !== undefined && { resourceVersion: expectRv }) } };
      return this.store.update(resource, merged, { expectRv });
    }
    return this.store.update(resource, next, { expectRv, keepStatus: resource.statusSubresource });
  }

  private patch(
    resource: ResourceDef,
    namespace: string | undefined,
    name: string,
    sub: string | undefined,
    patch: unknown,
    rawType: string,
    dryRun = false,
  ): { code: number; out: unknown } {
    const contentType = rawType.split(';')[0]!.trim();
    this.beforeWrite?.('patch', resource, namespace, name);
    const current = this.store.require(resource, namespace, name);
    let next: K8sObject;
    if (contentType === 'application/merge-patch+json') next = mergePatch(current, patch) as K8sObject;
    else if (contentType === 'application/json-patch+json') next = jsonPatch(current, patch) as K8sObject;
    else if (contentType === 'application/strategic-merge-patch+json' && resource.strategicMerge) next = strategicMergePatch(current, patch) as K8sObject;
    else {
      return {
        code: 415,
        out: status(
          415,
          'UnsupportedMediaType',
          `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json${resource.strategicMerge ? ', application/strategic-merge-patch+json' : ''}`,
        ),
      };
    }
    // A patch that sets metadata.resourceVersion is a precondition (optimistic concurrency), as in kube-apiserver.
    const expectRv = next.metadata?.resourceVersion;
    next.metadata = { ...next.metadata, name, ...(namespace && { namespace }) };
    this.admit({ verb: 'patch', resource, namespace, name, object: next, oldObject: current });
    if (dryRun) return { code: 200, out: next };
    return { code: 200, out: this.write(resource, next, current, sub, expectRv) };
  }

  private watch(req: IncomingMessage, res: ServerResponse, resource: ResourceDef, namespace: string | undefined, params: URLSearchParams): void {
    const selector = parseLabelSelector(params.get('labelSelector'));
    const fields = parseFieldSelector(params.get('fieldSelector'), resource);
    const rvParam = params.get('resourceVersion');
    const bookmarks = params.get('allowWatchBookmarks') === 'true';
    const timeoutSeconds = Number(params.get('timeoutSeconds') ?? '0');
    const inScope = (o: K8sObject) =>
      (namespace === undefined || o.metadata.namespace === namespace) && matchesLabels(o.metadata.labels, selector) && matchesFields(o, fields);

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

/** `gracePeriodSeconds` of a DELETE: the DeleteOptions body, else the query parameter. */
function deleteGrace(body: unknown, params: URLSearchParams): number | undefined {
  const fromBody = (body as { gracePeriodSeconds?: unknown } | undefined)?.gracePeriodSeconds;
  if (typeof fromBody === 'number') return fromBody;
  const q = params.get('gracePeriodSeconds');
  return q === null ? undefined : Number(q);
}
