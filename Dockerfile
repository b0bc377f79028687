# otelcol-red image: the committed cmd/otelcol-red module is built as is (go.sum verifies every
# module), the result runs as a non-root user on an empty base.
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

FROM scratch
COPY --from=certs /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/otelcol-red /otelcol-red
COPY configs/default.yaml /etc/otelcol-red/config.yaml
USER 10001
# In a container the endpoints must listen on every interface, not loopback.
ENV OTLP_GRPC_ENDPOINT=0.0.0.0:4317 OTLP_HTTP_ENDPOINT=0.0.0.0:4318 \
    METRICS_ENDPOINT=0.0.0.0:9464 HEALTH_ENDPOINT=0.0.0.0:13133
EXPOSE 4317 4318 9464 13133
ENTRYPOINT ["/otelcol-red"]
CMD ["--config=/etc/otelcol-red/config.yaml"]
