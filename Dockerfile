# One image for all the services; the SERVICE variable (or the container's command) picks which
# one runs:  docker run -e SERVICE=edge -p 8080:8080 gateway
#   docker build -t gateway .

# --- build: install everything, build every workspace package, then keep production deps only ---
FROM node:22.22.0-slim@sha256:dd9d21971ec4395903fa6143c2b9267d048ae01ca6d3ea96f16cb30df6187d94 AS build
# The guard's RE2 binding (re2) is a native addon that node-gyp compiles from source: the slim image
# has no toolchain, so this stage alone gets one (the runtime stage takes the compiled addon only).
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
# pnpm from npm (corepack cannot fetch it in every environment we build in); the version the
# workspace pins in package.json's packageManager.
RUN npm install -g pnpm@10.34.9
WORKDIR /app
# The lockfile alone is enough to fetch every dependency: this layer stays cached until it changes.
# The workspace file names the dependency patches (patches/README.md), which pnpm reads with it.
COPY pnpm-lock.yaml pnpm-workspace.yaml ./
COPY patches ./patches
RUN pnpm fetch
COPY . .
# re2 is built from its sources (DOWNLOAD_FORCE_BUILD: no prebuilt binary fetched from GitHub)
# against the headers of the Node that runs it (npm_config_nodedir: the image's own, nothing
# downloaded). The production install runs only the builds pnpm-workspace.yaml allows, and takes
# re2's from pnpm's side-effects cache, which the first install filled: it is compiled once. A
# binding that does not load fails the build here, not the guard at start.
RUN export DOWNLOAD_FORCE_BUILD=1 npm_config_nodedir="$(dirname "$(dirname "$(command -v node)")")" \
 && pnpm install --offline --frozen-lockfile \
 && pnpm build \
 && rm -rf node_modules packages/*/node_modules services/*/node_modules \
 && CI=true pnpm install --offline --frozen-lockfile --prod \
 && (cd services/guard && node -e "new (require('re2'))('a+').test('aa') || process.exit(1)") \
 # The addon's compiler output and C++ sources stay behind: only build/Release/re2.node runs.
 && rm -rf node_modules/.pnpm/re2@*/node_modules/re2/build/Release/obj.target node_modules/.pnpm/re2@*/node_modules/re2/vendor \
 # Only what runs: the sources, tests and their fixtures stay behind (data the services read at
 # run time, such as plans.yaml, catalog.yaml, the router's model and the request log's and the batch
# service's migrations/*.sql, is outside src/; the edge's
 # web console runs from its build in dist/console, its sources in console/ stay behind too, as
 # does the router's offline training code in training/, and the providers' recorded fixtures of
 # packages/testing/fixtures).
 && find packages services -mindepth 2 -maxdepth 2 \( -name src -o -name scripts -o -name console -o -name training -o -name fixtures -o -name 'tsconfig*.json' -o -name 'vitest*' \) -exec rm -rf {} +

# --- runtime: built output, production dependencies (the compiled re2 addon among them), the proto
# contracts and the catalog ---
# Node 22 LTS (Node 20 left maintenance in April 2026); the test suite runs on both.
FROM node:22.22.0-slim@sha256:dd9d21971ec4395903fa6143c2b9267d048ae01ca6d3ea96f16cb30df6187d94
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build --chown=root:root /app/package.json /app/pnpm-workspace.yaml ./
COPY --from=build --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/proto ./proto
COPY --from=build --chown=root:root /app/packages ./packages
COPY --from=build --chown=root:root /app/services ./services
# The files belong to root and the process runs as the image's unprivileged `node` user (uid 1000),
# so it cannot change its own code; the root filesystem can be mounted read-only.
USER 1000:1000
EXPOSE 8080 50051 50052 50053 50054 50055 50056 50057 50058 50059
CMD ["sh", "-c", "exec node services/${SERVICE:?set SERVICE to one of edge auth router executor metering request-log mcp guard cache batch}/dist/main.js"]
