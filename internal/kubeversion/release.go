package kubeversion

// Release is hami-scheduler's own version, which names the image tags
// (<Release>-k8s1.N). The Makefile sets it with -ldflags -X from
// HAMI_VERSION; a plain `go build` leaves "dev".
var Release = "dev"
