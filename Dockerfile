# otelcol-red image: the static binary `make build` writes (CGO off, -trimpath, from the committed
# cmd/otelcol-red, every module verified by go.sum) on an empty base, run as a non-root user.
# Every config of configs/ is in /etc/otelcol-red/; README.md, "Docker image", says how to run
# each one.
#
# Build it with `make image` (scripts/image.sh): it builds the binary and stages the two inputs
# no repository file holds — the host's CA bundle and the empty, 10001-owned data directory —
# under .cache/image/, then runs docker, podman or buildah on this file, whichever is present.
# No stage pulls a base image, so the build needs no registry; the image tests run is this one.
FROM scratch
COPY .cache/image/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY bin/otelcol-red /otelcol-red
COPY configs/ /etc/otelcol-red/
# The gateway configs keep their Elasticsearch sending queue on disk under /var/lib/otelcol-red
# (kafka-gateway.yaml: the directory itself, es-store.yaml: its storage/ folder). A scratch image
# has no shell to create them and user 10001 cannot create anything under /var/lib, so the
# staged tree (made by scripts/image.sh) is copied in owned by 10001.
# /var/lib first, owned by root, so that only the data directory below is 10001's.
COPY .cache/image/var/ /var/
COPY --chown=10001:10001 .cache/image/data/ /var/lib/otelcol-red/
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
