# One image for all the services; the SERVICE variable (or the container's command) picks which
# one runs:  docker run -e SERVICE=edge -p 8080:8080 gateway
#   docker build -t gateway .

# --- build: install everything, build every workspace package, then keep production deps only ---
FROM node:22.22.0-slim@sha256:dd9d21971ec4395903fa6143c2b9267d048ae01ca6d3ea96f16cb30df6187d94 AS build
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
RUN pnpm install --offline --frozen-lockfile \
 && pnpm build \
 && rm -rf node_modules packages/*/node_modules services/*/node_modules \
 && CI=true pnpm install --offline --frozen-lockfile --prod --ignore-scripts \
 # Only what runs: the sources, tests and their fixtures stay behind (data the services read at
 # run time, such as plans.yaml, catalog.yaml and the router's model, is outside src/; the edge's
 # web console runs from its build in dist/console, its sources in console/ stay behind too, as
 # does the router's offline training code in training/, and the providers' recorded fixtures of
 # packages/testing/fixtures).
 && find packages services -mindepth 2 -maxdepth 2 \( -name src -o -name scripts -o -name console -o -name training -o -name fixtures -o -name 'tsconfig*.json' -o -name 'vitest*' \) -exec rm -rf {} +

# --- runtime: built output, production dependencies, the proto contracts and the catalog ---
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
EXPOSE 8080 50051 50052 50053 50054 50055 50057
CMD ["sh", "-c", "exec node services/${SERVICE:?set SERVICE to one of edge auth router executor metering request-log mcp}/dist/main.js"]
