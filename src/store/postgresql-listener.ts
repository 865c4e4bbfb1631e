/**
 * PostgreSQL's LISTEN side of the event wake-up (ha:E1): one dedicated connection per replica
 * listening on `lockkeeper_events`, whose payload is the newest `seq` committed (sent by the
 * NOTIFY that ends every transaction of the repositories: postgresql-hot-path.ts). A lost
 * connection is opened again; readers poll meanwhile. The same connection hears
 * `lockkeeper_requests`: work another replica admitted, for the leader to adopt (ha:R2).
 */
import pg from 'pg';
import { REQUESTS_CHANNEL } from './admission-sql.ts';

const EVENTS_CHANNEL = 'lockkeeper_events';
const RECONNECT_MS = 1000;

export function listenForEvents(
  url: string,
  onEvent: (seq: number) => void,
  onRequest: () => void = () => {},
): { listening: Promise<void>; close(): Promise<void> } {
  let client: pg.Client | null = null;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;
  const connect = async () => {
    if (closed) return;
    const c = new pg.Client({ connectionString: url });
    c.on('notification', (message) => {
      if (message.channel === EVENTS_CHANNEL) onEvent(Number(message.payload ?? 0));
      else if (message.channel === REQUESTS_CHANNEL) onRequest();
    });
    c.on('error', () => {
      void c.end().catch(() => {});
      if (client === c) client = null;
      if (!closed) retry = setTimeout(() => void connect(), RECONNECT_MS);
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${EVENTS_CHANNEL}; LISTEN ${REQUESTS_CHANNEL}`);
      if (closed) await c.end();
      else client = c;
    } catch {
      await c.end().catch(() => {});
      if (!closed) retry = setTimeout(() => void connect(), RECONNECT_MS);
    }
  };
  const started = connect();
  return {
    /** Settles after the first attempt: listening, or polling until a retry succeeds. */
    listening: started,
    close: async () => {
      closed = true;
      clearTimeout(retry);
      await started;
      await client?.end().catch(() => {});
    },
  };
}
