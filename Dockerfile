# sexton's image for those who build with Docker; `make image` builds the
# same image without a daemon (deploy/check/image). The binary is static
# and runs as distroless's nonroot user (65532).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=(devel)
ARG COMMIT=
RUN CGO_ENABLED=0 go build -trimpath \
	-ldflags "-X 'sexton/internal/buildinfo.Version=${VERSION}' -X 'sexton/internal/buildinfo.Commit=${COMMIT}'" \
	-o /out/sexton ./cmd/sexton && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=(devel)
ARG COMMIT=
LABEL org.opencontainers.image.title=sexton \
	org.opencontainers.image.version=${VERSION} \
	org.opencontainers.image.revision=${COMMIT}
COPY --from=build /out/sexton /usr/local/bin/sexton
COPY --from=build --chown=65532:65532 /out/data /var/lib/sexton
USER 65532:65532
WORKDIR /var/lib/sexton
ENTRYPOINT ["/usr/local/bin/sexton"]
