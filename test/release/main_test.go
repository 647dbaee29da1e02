// Package release runs the chart as a cluster runs it (test/util/release):
// every rendered object applied, hami-scheduler and hami-webhook started as
// processes with their containers' arguments, mounted files and
// ServiceAccount tokens, two replicas each with leader election as shipped,
// on an API server that enforces RBAC and writes an audit log; the node
// side is HAMi's (internal/localcluster/simnode). TestMain builds both
// binaries from this tree.
package release

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hami-scheduler/hami-scheduler/hack/manifestgen"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"k8s.io/component-base/version"
)

var (
	controlPlane *localcluster.ControlPlane
	// auditLog is the API server's audit log.
	auditLog string
	// binDir holds the hami-scheduler and hami-webhook builds.
	binDir  string
	logFile *os.File
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	// hami-scheduler refuses an API server of no release; the in-process
	// one reports the release the test binary is stamped with.
	if v := version.Get().GitVersion; !strings.HasPrefix(v, "v1.") {
		fmt.Printf("release: the in-process API server would report version %q: run make test-unit, which stamps the test binaries (TEST_LDFLAGS)\n", v)
		os.Exit(m.Run())
	}
	os.Exit(localcluster.RunLogged("hami-release", 2, "control plane and release logs", func(f *os.File) int {
		logFile = f
		return run(m)
	}))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "hami-release-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = filepath.Join(dir, "bin")
	for _, cmd := range []string{"hami-scheduler", "hami-webhook"} {
		build := exec.Command("go", "build", "-o", filepath.Join(binDir, cmd), "./cmd/"+cmd)
		build.Dir = manifestgen.RepoRoot()
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n%s", cmd, err, out)
			return 1
		}
	}
	auditLog = filepath.Join(dir, "audit.log")
	controlPlane, err = localcluster.Start(localcluster.Options{Log: logFile, Authorize: true, AuditLog: auditLog})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start control plane:", err)
		return 1
	}
	defer controlPlane.Stop()
	return m.Run()
}
