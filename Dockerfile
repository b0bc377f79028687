# otelcol-red image: the committed cmd/otelcol-red module is built as is (go.sum verifies every
# module), the result runs as a non-root user on an empty base. Every config of configs/ is in
# /etc/otelcol-red/; README.md, "Docker image", says how to run each one.
FROM golang:1.26-bookworm AS build
WORKDIR /src
ENV CGO_ENABLED=0 GONOSUMDB=github.com/open-telemetry/opentelemetry-collector-contrib
# Module files first, so the dependency download is cached apart from source changes.
COPY go.mod go.sum ./
COPY cmd/otelcol-red/go.mod cmd/otelcol-red/go.sum ./cmd/otelcol-red/
RUN cd cmd/otelcol-red && go mod download
COPY . .
RUN cd cmd/otelcol-red && go build -trimpath -ldflags='-s -w' -o /out/otelcol-red .

FROM debian:bookworm-slim AS certs
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/*

# The gateway configs keep their Elasticsearch sending queue on disk under /var/lib/otelcol-red
# (kafka-gateway.yaml: the directory itself, es-store.yaml: its storage/ folder). A scratch image
# has no shell to create them and user 10001 cannot create anything under /var/lib, so they are
# made here, owned by 10001, and copied into the final image with their owner.
FROM debian:bookworm-slim AS data
RUN mkdir -p /var/lib/otelcol-red/storage && chown -R 10001:10001 /var/lib/otelcol-red

FROM scratch
COPY --from=certs /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/otelcol-red /otelcol-red
COPY configs/ /etc/otelcol-red/
COPY --from=data --chown=10001:10001 /var/lib/otelcol-red /var/lib/otelcol-red
USER 10001
# In a container the endpoints must listen on every interface, not loopback.
ENV OTLP_GRPC_ENDPOINT=0.0.0.0:4317 OTLP_HTTP_ENDPOINT=0.0.0.0:4318 \
    METRICS_ENDPOINT=0.0.0.0:9464 HEALTH_ENDPOINT=0.0.0.0:13133
EXPOSE 4317 4318 9464 13133
# The disk queues: mount a volume here so they survive the container. A named volume starts
# with the image's content (owned by 10001); a bind-mounted host directory must be writable by
# uid 10001.
VOLUME ["/var/lib/otelcol-red"]
ENTRYPOINT ["/otelcol-red"]
CMD ["--config=/etc/otelcol-red/default.yaml"]
