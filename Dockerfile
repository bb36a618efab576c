# syntax=docker/dockerfile:1
#
# mongodns runtime image: mongodns-server and every tool (mongodns-import,
# mongodns-sign, mongodns-zone) on Debian slim.
#
#   docker build -t mongodns:local .
#   docker run --rm mongodns:local --help
#
# Stage 1 builds release binaries with the Rust toolchain; stage 2 carries only
# the binaries, the example configuration and zones, and CA certificates (for
# mongodb+srv:// and TLS connections). Runs as an unprivileged user; binding
# port 53 works because Docker lets containers bind low ports
# (net.ipv4.ip_unprivileged_port_start=0), elsewhere grant CAP_NET_BIND_SERVICE.

FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin mongodns-server --bin mongodns-import \
        --bin mongodns-sign --bin mongodns-zone \
    && mkdir -p /out \
    && cp target/release/mongodns-server target/release/mongodns-import \
        target/release/mongodns-sign target/release/mongodns-zone /out/ \
    && strip /out/*

FROM debian:bookworm-slim AS runtime
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 5353 --user-group --home-dir /nonexistent --shell /usr/sbin/nologin mongodns \
    && mkdir -p /etc/mongodns /var/log/mongodns /usr/share/mongodns \
    && chown mongodns:mongodns /var/log/mongodns
COPY --from=build /out/ /usr/local/bin/
COPY mongodns.toml /etc/mongodns/mongodns.toml
COPY examples /usr/share/mongodns/examples
USER mongodns
EXPOSE 53/udp 53/tcp 8053/tcp
STOPSIGNAL SIGTERM
ENTRYPOINT ["mongodns-server"]
CMD ["--config", "/etc/mongodns/mongodns.toml"]
