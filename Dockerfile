# Lockkeeper's image, built from this repository: docker build -t lockkeeper .
# Two stages: the first installs every dependency and builds; the second keeps what the
# gateway runs on (production dependencies, the build, the sources tsx runs) and nothing of
# the compilers. The commands are package.json's own — `npm ci`, `npm run build`, and what
# `npm start` runs (`node dist/src/cli.js serve`, through scripts/start.mjs) — so the image runs
# as a checkout does (test/deploy/dockerfile.test.ts). The image runs node itself, not npm: the
# build is made here and never stale, so start.mjs's rebuild check has nothing to do, and node
# as the container's process gets SIGTERM directly.
ARG NODE_IMAGE=node:20.20-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
# better-sqlite3 compiles from source when no prebuilt binary matches the platform.
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
COPY . .
RUN npm ci
RUN npm run build
RUN npm prune --omit=dev

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    LOCKKEEPER_HOST=0.0.0.0 \
    LOCKKEEPER_PORT=4000 \
    LOCKKEEPER_DATABASE_URL=file:/var/lib/lockkeeper/lockkeeper.db
WORKDIR /app
COPY --from=build --chown=node:node /app /app
# `kubectl exec deploy/lockkeeper -- lockkeeper token create …`: package.json's bin, on the PATH.
RUN mkdir -p /var/lib/lockkeeper && chown node:node /var/lib/lockkeeper \
  && ln -s /app/bin/lockkeeper.js /usr/local/bin/lockkeeper
USER node
VOLUME /var/lib/lockkeeper
EXPOSE 4000
# package.json's start without its `exec`: SIGTERM reaches the gateway, which shuts down gracefully.
CMD ["node", "--optimize-for-size", "dist/src/cli.js", "serve"]
