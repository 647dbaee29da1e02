# Multi-stage build of hami-scheduler and hami-webhook as static binaries
# in one small, non-root image.
# One image per band of Kubernetes minors, tagged <version>-k8s<minor>
# (docs/compatibility.md):
#   docker build -t hami-scheduler:0.1.0-k8s1.37 --build-arg K8S_MINOR=1.37 --build-arg GIT_COMMIT=$(git rev-parse --short HEAD) .
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG GIT_COMMIT=unknown
ARG K8S_MINOR=1.37
ENV CGO_ENABLED=0
# The webhook is the newest build's in every band; an older band's
# scheduler (hack/bands/k8s<minor>) replaces the newest one.
RUN make build GIT_COMMIT=${GIT_COMMIT} BIN=/out && \
    if [ -f "hack/bands/k8s${K8S_MINOR}/go.mod" ]; then \
      make build K8S_MINOR=${K8S_MINOR} GIT_COMMIT=${GIT_COMMIT} BIN=/out && \
      mv "/out/hami-scheduler-${K8S_MINOR}" /out/hami-scheduler; \
    fi

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/hami-scheduler /hami-scheduler
COPY --from=build /out/hami-webhook /hami-webhook
USER 65532:65532
ENTRYPOINT ["/hami-scheduler"]
