import { renderGraphiQL } from '@graphql-yoga/render-graphiql';

/** The call the package's page makes; ours goes through `lockkeeperGraphiQL` instead. */
const RENDER_CALL = 'YogaGraphiQL.renderYogaGraphiQL(';

/**
 * Runs in the page before GraphiQL renders. GraphiQL sends the Headers tab with every HTTP
 * request, but its graphql-ws client only sends `connectionParams` in connection_init: with
 * authentication on, a subscription would be refused (close 4403) however the tab is filled.
 * So the tab's `Authorization` (any case) is also given as `{ authorization }` in
 * connection_init, read when the socket connects (GraphiQL opens one per subscription run
 * and closes it when none is left, so an edited token is used by the next run).
 */
const HEADERS_TO_CONNECTION_PARAMS = `<script>
  (function () {
    // A socket the gateway closes with 4403 (token missing or invalid) is, for graphql-ws,
    // one to retry: five times over ~40 s, then GraphiQL shows the close event as
    // {"isTrusted": true}. Its close handler gets the message instead, with graphql-ws's
    // fatal code 4401: no retry, and GraphiQL shows it (issue 30, point 4).
    var MESSAGE = 'token missing or invalid: set Authorization in the Headers tab';
    var Native = window.WebSocket;
    function LockkeeperSocket(url, protocols) {
      var socket = protocols === undefined ? new Native(url) : new Native(url, protocols);
      var onclose = null;
      Object.defineProperty(socket, 'onclose', { configurable: true, get: function () { return onclose; }, set: function (h) { onclose = h; } });
      socket.addEventListener('close', function (event) {
        if (typeof onclose !== 'function') return;
        if (event.code !== 4403) return onclose.call(socket, event);
        // Shown by GraphiQL as it is: the message first, no stack. code and reason make it a close event to graphql-ws.
        var error = { message: MESSAGE, code: 4401, reason: 'token missing or invalid' };
        onclose.call(socket, error);
      });
      return socket;
    }
    LockkeeperSocket.prototype = Native.prototype;
    ['CONNECTING', 'OPEN', 'CLOSING', 'CLOSED'].forEach(function (k) { LockkeeperSocket[k] = Native[k]; });
    window.WebSocket = LockkeeperSocket;
  })();
  window.lockkeeperGraphiQL = function (lib, root, options) {
    var headers = typeof options.headers === 'string' ? options.headers : '';
    function authorization() {
      try {
        var parsed = JSON.parse(headers || '{}');
        for (var key in parsed) if (key.toLowerCase() === 'authorization' && typeof parsed[key] === 'string') return parsed[key];
      } catch (e) {}
      return null;
    }
    var given = options.onEditHeaders;
    lib.renderYogaGraphiQL(root, Object.assign({}, options, {
      onEditHeaders: function (value) { headers = value; if (given) given(value); },
      connectionParams: function () { var a = authorization(); return a ? { authorization: a } : {}; },
    }));
  };
</script>`;

/**
 * GraphiQL from the installed package (assets inlined: no CDN), with the Headers tab's
 * token reaching graphql-ws connection_init. Fails loudly if the package's page changes
 * shape, so an upgrade cannot silently drop it (test/browser/graphiql.test.ts proves it).
 */
export const renderLockkeeperGraphiQL: typeof renderGraphiQL = (options) => {
  const page = renderGraphiQL(options);
  if (page.split(RENDER_CALL).length !== 2) throw new Error(`@graphql-yoga/render-graphiql changed: expected one ${RENDER_CALL} in its page`);
  return page.replace('<script>', `${HEADERS_TO_CONNECTION_PARAMS}\n<script>`).replace(RENDER_CALL, 'window.lockkeeperGraphiQL(YogaGraphiQL, ');
};
