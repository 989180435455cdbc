# Production image (current LTS Node): the gateway by default; the tool workers or the dev chain
# with another command (see docker-compose.yml). Built in two stages: the first compiles the
# TypeScript (`npm run build` → dist/), the image itself holds only the compiled JavaScript and the
# runtime dependencies — no TypeScript toolchain (`npm ci --omit=dev`). Runs as the unprivileged
# "node" user. `docker compose exec gateway1 npm run books:check` reconciles the books
# (node dist/src/books/check-command.js underneath).
FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY contracts-abi ./contracts-abi
COPY chain-fixtures ./chain-fixtures
COPY CHANGELOG.md ./
RUN npm run build

FROM node:24-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
# The launchers of `npm start` and `npm run books:check`: with NODE_ENV=production both run dist/.
COPY scripts/launch.mjs scripts/start.mjs scripts/books-check.mjs ./scripts/
USER node
EXPOSE 8402
HEALTHCHECK --interval=10s --timeout=3s --start-period=15s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8402)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "dist/src/main.js"]
