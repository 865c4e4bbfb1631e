/**
 * The last check before a request leaves the process (ha:L3, ha:L8). A check made when an
 * action starts — or even when its request is built — is not enough: a process frozen
 * (SIGSTOP, a stalled VM) between that check and the instant its bytes reach the socket
 * sends the request after it wakes, long after another replica took the lease. So the
 * connection of every request that changes the cluster is checked again when it is
 * established, just before anything is written to it, and destroyed unwritten when this
 * replica may no longer act: the request fails (typed Unavailable by the plugin) and the
 * other side sees a connection closed without a request.
 *
 * What is left is the time between that check and the `write` system call in the same
 * synchronous run of JavaScript: no in-process check can be atomic with sending, since the
 * Kubernetes API knows no epoch. (Pageserver attachments are fenced by generations: ha:B2.)
 */
import type { Agent } from 'node:http';
import type { Socket } from 'node:net';
import { BackendError } from './errors.ts';

type CreateConnection = (options: object, callback?: (error: Error | null, socket: Socket) => void) => Socket | undefined;

/** Makes every connection `agent` opens check `mayAct()` once connected, before its first byte is written. */
export function gateConnections<A extends Agent>(agent: A, mayAct: () => boolean, what: () => string): A {
  const holder = agent as unknown as { createConnection: CreateConnection };
  const create = holder.createConnection.bind(agent);
  holder.createConnection = (options, callback) => {
    const socket = create(options, callback);
    // Registered before the HTTP client queues its first write (that waits for 'connect' too), so it runs first.
    socket?.once('connect', () => {
      if (!mayAct()) socket.destroy(new BackendError('Unavailable', `${what()} refused as it was sent: this replica is not the leader (ha:L3)`));
    });
    return socket;
  };
  return agent;
}
