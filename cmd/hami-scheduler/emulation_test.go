package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/version"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/features"

	"github.com/hami-scheduler/hami-scheduler/internal/kubeversion"
)

// versionServer answers /version with gitVersion and counts the requests.
func versionServer(t *testing.T, gitVersion string) (url string, requests *atomic.Int32) {
	t.Helper()
	requests = new(atomic.Int32)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.URL.Path != "/version" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(version.Info{GitVersion: gitVersion, Major: "1"})
	}))
	t.Cleanup(server.Close)
	return server.URL, requests
}

// kubeconfigFor is a kubeconfig file that reaches url without credentials.
func kubeconfigFor(t *testing.T, url string) string {
	return writeFile(t, "kubeconfig", fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: %q}
users:
- name: u
  user: {}
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
`, url))
}

// runEmulating runs the command on args with its RunE replaced, and
// returns the --emulated-version value and whether DRADeviceTaintRules
// (on from 1.37, the API a 1.36 server lacks) was on when RunE ran.
func runEmulating(t *testing.T, args ...string) (emulated string, taintRules bool, err error) {
	t.Helper()
	err = execute(func(c *cobra.Command) error {
		emulated = c.Flags().Lookup(emulatedVersionFlag).Value.String()
		taintRules = utilfeature.DefaultFeatureGate.Enabled(features.DRADeviceTaintRules)
		return nil
	}, args...)
	return emulated, taintRules, err
}

// TestEmulatesTheServersMinor: the scheduler emulates the minor its API
// server reports, whether the kubeconfig comes from --config's
// clientConnection or the deprecated --kubeconfig, so a 1.36 server gets
// a scheduler without DeviceTaintRules; a server the build does not serve
// is refused before anything starts; an operator's --emulated-version wins.
func TestEmulatesTheServersMinor(t *testing.T) {
	binary, err := kubeversion.BinaryMinor()
	if err != nil {
		t.Fatal(err)
	}
	if binary != 37 {
		t.Skipf("the rows are written for a 1.37 build; this one is 1.%d", binary)
	}
	tests := []struct {
		name       string
		server     string
		viaConfig  bool
		extra      []string
		want       string
		taintRules bool
		wantErr    string
	}{
		{name: "1.36 server", server: "v1.36.3", want: "kube=1.36"},
		{name: "1.36 server, kubeconfig in the config file", server: "v1.36.3", viaConfig: true, want: "kube=1.36"},
		{name: "1.34 server", server: "v1.34.4", want: "kube=1.34"},
		{name: "1.37 server", server: "v1.37.2", want: "kube=1.37", taintRules: true},
		{name: "1.38 server", server: "v1.38.0", want: "kube=1.37", taintRules: true},
		{name: "operator's emulated version", server: "v1.37.2", extra: []string{"--emulated-version=1.35"}, want: "1.35"},
		{name: "1.33 server refused", server: "v1.33.6", wantErr: "serves API servers 1.34 to 1.38 only"},
		{name: "1.39 server refused", server: "v1.39.0", wantErr: "serves API servers 1.34 to 1.38 only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url, requests := versionServer(t, tt.server)
			kubeconfig := kubeconfigFor(t, url)
			args := []string{"--kubeconfig", kubeconfig}
			if tt.viaConfig {
				args = []string{"--config", writeFile(t, "config.yaml", header+"clientConnection:\n  kubeconfig: "+kubeconfig+"\n")}
			}
			emulated, taintRules, err := runEmulating(t, append(args, tt.extra...)...)
			if requests.Load() == 0 {
				t.Errorf("the API server was never asked for its version")
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(emulated, tt.want) {
				t.Errorf("--emulated-version = %s, want %s", emulated, tt.want)
			}
			if taintRules != tt.taintRules {
				t.Errorf("DRADeviceTaintRules on = %v, want %v", taintRules, tt.taintRules)
			}
		})
	}
}

// TestPrintingNeedsNoServer: --version and --write-config-to do not ask
// the API server anything.
func TestPrintingNeedsNoServer(t *testing.T) {
	url, requests := versionServer(t, "v1.37.2")
	kubeconfig := kubeconfigFor(t, url)
	err := execute(func(*cobra.Command) error { return nil }, "--kubeconfig", kubeconfig, "--write-config-to", writeFile(t, "out.yaml", ""))
	if err != nil {
		t.Fatal(err)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("--write-config-to asked the API server %d times", n)
	}
}

// TestUnreachableServerFails: a server that never answers fails the start
// with its address once the wait is over, rather than hanging.
func TestUnreachableServerFails(t *testing.T) {
	old := serverVersionTimeout
	serverVersionTimeout = 2 * time.Second
	t.Cleanup(func() { serverVersionTimeout = old })
	server := httptest.NewServer(http.NotFoundHandler())
	url := server.URL
	server.Close()
	_, _, err := runEmulating(t, "--kubeconfig", kubeconfigFor(t, url))
	if err == nil || !strings.Contains(err.Error(), "reading the API server's version at "+url) {
		t.Fatalf("error %v, want one naming %s", err, url)
	}
}
