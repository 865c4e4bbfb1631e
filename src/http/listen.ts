import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GRAPHQL_PATH } from '../graphql/yoga.ts';

interface BoundAddress {
  port: number;
  host: string;
  /** Where GraphQL (and GraphiQL) answer. */
  url: string;
}

/** Listens; port 0 picks a free port. Rejects when the address cannot be bound. */
export function listen(server: Server, port: number, host: string): Promise<BoundAddress> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const address = server.address() as AddressInfo;
      const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      resolve({ port: address.port, host: address.address, url: `http://${shownHost}:${address.port}${GRAPHQL_PATH}` });
    });
  });
}
