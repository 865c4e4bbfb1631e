import type { IncomingMessage, ServerResponse } from 'node:http';
import type { LockkeeperYoga } from '../graphql/yoga.ts';
import { PayloadTooLargeError, readBody, sendJson } from '../rest/http-io.ts';
import type { Handler } from './router.ts';

/** GraphQL over HTTP through yoga, which has no body limit of its own: the body is read here, bounded. */
export function graphqlOverHttp(
  yoga: LockkeeperYoga,
  maxBodyBytes: number,
  /** A stand-by's forward of mutations to the leader (leader-forward.ts); true when it answered. */
  forward?: (req: IncomingMessage, res: ServerResponse, body: Buffer) => Promise<boolean>,
): Handler {
  return async (req, res) => {
    if (req.method === 'POST') {
      let body: Buffer;
      try {
        body = await readBody(req, maxBodyBytes);
      } catch (e) {
        if (!(e instanceof PayloadTooLargeError)) throw e;
        sendJson(res, 413, { errors: [{ message: e.message, extensions: { code: 'PAYLOAD_TOO_LARGE' } }] }, { connection: 'close' });
        return;
      }
      if (forward && (await forward(req, res, body))) return;
      // yoga takes a body already read from `req.body`.
      if (body.length) (req as IncomingMessage & { body?: Buffer }).body = body;
    }
    await yoga.handle(req, res);
  };
}
