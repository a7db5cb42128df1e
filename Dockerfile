# syntax=docker/dockerfile:1
# One image for all three services; docker-compose.yml picks the service with `command`:
#   node services/api/dist/main.js | node services/agent-worker/dist/main.js | node services/tool-worker/dist/main.js
FROM node:24-slim

WORKDIR /app
ENV npm_config_update_notifier=false \
    npm_config_fund=false \
    npm_config_audit=false

# Dependencies first, so that editing sources does not reinstall them.
# (npm workspaces need every workspace's package.json before `npm ci`.)
COPY package.json package-lock.json ./
COPY packages/shared/package.json packages/shared/
COPY packages/scripted-llm/package.json packages/scripted-llm/
COPY packages/client/package.json packages/client/
COPY packages/client/bin packages/client/bin
COPY packages/ui/package.json packages/ui/
COPY services/api/package.json services/api/
COPY services/agent-worker/package.json services/agent-worker/
COPY services/tool-worker/package.json services/tool-worker/
RUN --mount=type=cache,target=/root/.npm npm ci

COPY . .
RUN npm run build \
 && mkdir -p /data /config \
 && chown node:node /data

# Dev dependencies are kept on purpose: they include MCP servers (e.g.
# @modelcontextprotocol/server-memory) that an mcp.json may start over stdio.
# NODE_OPTIONS: V8 heap sizing measured by `npm run bench` (same as HEAP_FLAGS in
# scripts/lib/services.mjs, where the trade-off is written down): ≈ 260 MB instead of ≈ 550 MB
# peak RSS for an agent-worker with 1,000 model streams open, for more frequent GC. Setting
# NODE_OPTIONS in the environment replaces it.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    NODE_OPTIONS="--max-semi-space-size=32 --max-old-space-size=384"
USER node
EXPOSE 3000
# Default: the API. SIGTERM makes each service stop taking work and finish what it holds.
CMD ["node", "services/api/dist/main.js"]
