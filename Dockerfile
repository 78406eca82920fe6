# The service's image. One image for every process: the command chooses the mode
# (all, api, worker, indexing or crawler; see server/main.ts), and the admin CLI runs
# from it too (compose's migrate service). Node runs directly as PID 1 so that the
# container's SIGTERM reaches the service, which stops within seconds.
# The Node release the test suite runs on, by its full version: a rebuild gets the same one.
FROM node:20.20.2-bookworm-slim
# tesseract OCRs images for the indexing service (English; add tesseract-ocr-<lang>
# packages for other scripts).
RUN apt-get update \
 && apt-get install -y --no-install-recommends tesseract-ocr \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY . .
# The embedded PostgreSQL and the local object store write under .data/ when no
# DATABASE_URL or S3_ENDPOINT is given (a quick try; compose gives both).
RUN mkdir -p .data && chown node:node .data
USER node
EXPOSE 3000
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "--import", "tsx", "server/main.ts"]
CMD ["all"]
