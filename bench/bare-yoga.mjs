#!/usr/bin/env node
// The start-up benchmark's reference (bench/startup.ts): a bare graphql-yoga server, plain
// node like the compiled gateway, started the same way (`npm run bench:bare-yoga`, on
// LOCKKEEPER_PORT), answering the benchmark's query `{ nodes { totalCount } }` with 4.
import { createServer } from 'node:http';
import { createSchema, createYoga } from 'graphql-yoga';

const yoga = createYoga({
  schema: createSchema({
    typeDefs: 'type Query { nodes: NodeConnection! } type NodeConnection { totalCount: Int! }',
    resolvers: { Query: { nodes: () => ({ totalCount: 4 }) } },
  }),
  graphqlEndpoint: '/graphql',
  logging: false,
});
const server = createServer(yoga);
server.listen(Number(process.env.LOCKKEEPER_PORT ?? 4000), process.env.LOCKKEEPER_HOST ?? '127.0.0.1');
const stop = () => server.close(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
