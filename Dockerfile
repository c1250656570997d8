# syntax=docker/dockerfile:1
# Pigeonhole: the Bun server, its migrations and litestream 0.3. The litestream binary
# comes from the npm package @flydotio/litestream-linux-x64 (an optional dependency that
# only installs on linux/amd64, which is what Fly's builders produce).
ARG BUN_VERSION=1.4.5

FROM oven/bun:${BUN_VERSION}-slim AS deps
WORKDIR /app
COPY package.json bun.lock ./
# bun install applies the pinned postal-mime patch from here.
COPY patches ./patches
RUN bun install --frozen-lockfile --production

FROM oven/bun:${BUN_VERSION}-slim
WORKDIR /app
# RUN_AS is the image's `bun` user (uid and gid 1000). The entry starts as root only to
# hand the database folder to it (Fly mounts volumes owned by root, whatever USER says),
# then runs litestream and the server as that user.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    SMTP_PORT=2525 \
    DATABASE_PATH=/data/pigeonhole.db \
    SERVER_SCRIPT=dist/server.js \
    RUN_AS=1000:1000
COPY --from=deps /app/node_modules ./node_modules
COPY package.json bun.lock tsconfig.json litestream.yml ./
# Migrations are read at start-up from drizzle/meta/_journal.json.
COPY drizzle ./drizzle
COPY src ./src
# The server runs as one minified bundle: about 9 MiB less idle RSS and half the start-up
# time of loading the source modules (`bun run bench`). The entry and the CLI stay source.
# The build also bundles the parse worker and the self-signed certificate maker, which
# the server starts from dist/.
RUN bun build src/index.ts --target=bun --minify --outfile=dist/server.js && bun build src/core/inbound/parse-worker.ts --target=bun --minify --outfile=dist/parse-worker.js && bun build src/smtp/self-signed-child.ts --target=bun --minify --outfile=dist/self-signed-child.js
# `litestream` on PATH for operators in `fly ssh console` (restores, snapshots, generations).
RUN mkdir -p /data && chown bun:bun /data \
 && ln -s /app/node_modules/@flydotio/litestream-linux-x64/litestream /usr/local/bin/litestream
EXPOSE 3000 2525
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
  CMD ["bun", "-e", "const r = await fetch(`http://127.0.0.1:${process.env.PORT}/health`); process.exit(r.ok ? 0 : 1)"]
CMD ["bun", "src/entry.ts"]
