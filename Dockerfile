# Multi-stage build of hami-scheduler and hami-webhook as static binaries
# in one small, non-root image.
#   docker build -t hami-scheduler:latest --build-arg GIT_COMMIT=$(git rev-parse --short HEAD) .
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG GIT_COMMIT=unknown
ENV CGO_ENABLED=0
RUN make build GIT_COMMIT=${GIT_COMMIT} BIN=/out

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/hami-scheduler /hami-scheduler
COPY --from=build /out/hami-webhook /hami-webhook
USER 65532:65532
ENTRYPOINT ["/hami-scheduler"]
