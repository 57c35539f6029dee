# The central analyzer as a container: the Loki push receiver, the web UI,
# the JSON API and /metrics, for the hosts' Alloy to push their journals to.
# It reads no journal of its own and writes no notes (there is no host
# journal inside a container). No Docker engine runs where this project is
# built; deploy/dockerfile_test.go runs this file's command line for real.
#
#   docker build -t llmfleet-analyzer .
#   docker run -p 8080:8080 -v analyzer:/var/lib/analyzer \
#     -e ANALYZER_PUSH_TOKEN=... llmfleet-analyzer
FROM golang:1.26-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends libsystemd-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=container
RUN CGO_ENABLED=1 go build -tags nomsgpack -ldflags "-X main.buildVersion=${VERSION}" -o /out/analyzer ./cmd/analyzer

FROM debian:bookworm-slim
# libsystemd0: the sd-journal reader is linked in, though unused here.
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates libsystemd0 && rm -rf /var/lib/apt/lists/* \
	&& install -d -o 65532 -g 65532 -m 0750 /var/lib/analyzer
COPY --from=build /out/analyzer /usr/bin/analyzer
USER 65532:65532
VOLUME /var/lib/analyzer
EXPOSE 8080
# A push token is required on a non-loopback --listen: pass ANALYZER_PUSH_TOKEN.
ENTRYPOINT ["/usr/bin/analyzer", "serve", "--no-journal", "--no-notes", "--listen", "0.0.0.0:8080", "--db", "/var/lib/analyzer/analyzer.db"]
