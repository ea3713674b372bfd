# sexton's image for those who build with Docker (docker build -t sexton:v1 .);
# `make image` builds the same image without a daemon (deploy/check/image).
# The binary is static (CGO_ENABLED=0), the final stage has no shell and no
# package manager, and it runs as distroless's nonroot user (65532).
# deploy/check's TestDockerfile checks these rules.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=(devel)
ARG COMMIT=
ARG BUILD_DATE=
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -buildvcs=false \
	-ldflags "-X 'sexton/internal/buildinfo.Version=${VERSION}' -X 'sexton/internal/buildinfo.Commit=${COMMIT}' -X 'sexton/internal/buildinfo.Date=${BUILD_DATE}'" \
	-o /out/sexton ./cmd/sexton && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=(devel)
ARG COMMIT=
ARG BUILD_DATE=
LABEL org.opencontainers.image.title=sexton \
	org.opencontainers.image.version=${VERSION} \
	org.opencontainers.image.revision=${COMMIT} \
	org.opencontainers.image.created=${BUILD_DATE}
COPY --from=build /out/sexton /usr/local/bin/sexton
COPY --from=build --chown=65532:65532 /out/data /var/lib/sexton
USER 65532:65532
WORKDIR /var/lib/sexton
VOLUME /var/lib/sexton
ENTRYPOINT ["/usr/local/bin/sexton"]
