package kubeversion

import (
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
)

// UnservedError is an API server outside a build's range.
type UnservedError struct {
	// Server is the API server's version as it reported it.
	Server string
	// Build is the band of the running binary.
	Build Band
	// Release is the hami-scheduler version, for the image tag to name.
	Release string
}

func (e *UnservedError) Error() string {
	server, _ := version.ParseGeneric(e.Server)
	var b strings.Builder
	fmt.Fprintf(&b, "the API server is Kubernetes %s, and this hami-scheduler (kube-scheduler 1.%d) serves API servers %s only", e.Server, e.Build.Minor, e.Build.Range())
	if server == nil {
		return b.String()
	}
	if band, ok := BandFor(int(server.Minor())); ok {
		fmt.Fprintf(&b, ": run the build for Kubernetes 1.%d (image tag %s, or make build K8S_MINOR=1.%d)", band.Minor, band.Tag(e.Release), band.Minor)
	} else {
		fmt.Fprintf(&b, ": no build of hami-scheduler serves Kubernetes 1.%d; the builds serve %s", server.Minor(), Supported())
	}
	return b.String()
}

// Emulation is what a build runs as against an API server.
type Emulation struct {
	// Server is the API server's version as it reported it.
	Server string
	// Minor is the Kubernetes minor to emulate; it equals the binary's when
	// nothing is to be emulated.
	Minor int
}

// Choose picks what a build of the binary minor runs as against an API
// server that reports serverVersion (its /version gitVersion). It fails
// with an *UnservedError when the build does not serve that server, and
// with a plain error when the version cannot be read.
func Choose(binaryMinor int, serverVersion, release string) (Emulation, error) {
	server, err := version.ParseGeneric(serverVersion)
	if err != nil {
		return Emulation{}, fmt.Errorf("the API server reports version %q: %w", serverVersion, err)
	}
	build := bandOf(binaryMinor)
	if server.Major() != 1 || !build.Serves(int(server.Minor())) {
		return Emulation{}, &UnservedError{Server: serverVersion, Build: build, Release: release}
	}
	return Emulation{Server: serverVersion, Minor: build.Emulates(int(server.Minor()))}, nil
}

// bandOf is the shipped band of a build of minor 1.m, or a plain band of
// that minor for a build this tree does not ship.
func bandOf(m int) Band {
	for _, b := range Bands {
		if b.Minor == m {
			return b
		}
	}
	return Band{Minor: m}
}

// kubernetesModule is the module whose release a build is compiled from.
const kubernetesModule = "k8s.io/kubernetes"

// BinaryMinor is the Kubernetes minor this binary is compiled from, read
// from its build information (the k8s.io/kubernetes module it links), so
// that it is right however the binary was built.
func BinaryMinor() (int, error) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return 0, fmt.Errorf("the binary carries no build information")
	}
	for _, dep := range info.Deps {
		if dep.Path != kubernetesModule {
			continue
		}
		return minorOf(dep.Version)
	}
	return 0, fmt.Errorf("the binary does not link %s", kubernetesModule)
}

// minorOf is the minor of a k8s.io/kubernetes module version, v1.N.x.
func minorOf(moduleVersion string) (int, error) {
	parts := strings.SplitN(strings.TrimPrefix(moduleVersion, "v"), ".", 3)
	if len(parts) < 2 || parts[0] != "1" {
		return 0, fmt.Errorf("%s version %q is not v1.N.x", kubernetesModule, moduleVersion)
	}
	return strconv.Atoi(parts[1])
}
