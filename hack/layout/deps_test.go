package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const module = "example.com/m"

// TestCheckDeps: each rule of depRules, broken and kept. A case's graph
// is its imports as "importer>imported" pairs and its roots the packages
// go list matched, both without the module's prefix; want are the
// violations as printed, a line each.
func TestCheckDeps(t *testing.T) {
	tests := []struct {
		name, rule, roots, graph string
		want                     string
	}{
		{"shipped code may use internal packages", "shipped code", "plugins", "plugins>internal/fwcompat plugins>k8s.io/klog/v2",
			""},
		{"shipped code importing the local cluster", "shipped code", "plugins", "plugins>internal/localcluster/simnode",
			"shipped code: plugins imports internal/localcluster/simnode (local-cluster code), reached from plugins: plugins"},
		{"shipped code reaching test code through others", "shipped code", "cmd/hami-scheduler", "cmd/hami-scheduler>plugins plugins>plugins/cache plugins/cache>test/util/release",
			"shipped code: plugins/cache imports test/util/release (test code), reached from cmd/hami-scheduler: cmd/hami-scheduler -> plugins -> plugins/cache"},
		{"shipped code importing test fixtures", "shipped code", "devices", "devices>devices/devicestest",
			"shipped code: devices imports devices/devicestest (test code), reached from devices: devices"},
		{"test fixtures among the roots are not checked", "shipped code", "devices devices/devicestest", "devices/devicestest>devices devices/devicestest>internal/localcluster",
			""},
		{"shipped code importing tool code", "shipped code", "webhook", "webhook>hack/manifestgen",
			"shipped code: webhook imports hack/manifestgen (tool code (hack/)), reached from webhook: webhook"},
		{"one import reached from three roots, reported once from the nearest", "shipped code", "plugins cmd/hami-scheduler plugins/nodelock", "cmd/hami-scheduler>plugins plugins>plugins/nodelock plugins/nodelock>test/util/cluster",
			"shipped code: plugins/nodelock imports test/util/cluster (test code), reached from plugins/nodelock (and 2 other roots): plugins/nodelock"},
		{"a forbidden package's own imports are not followed", "shipped code", "apis/config", "apis/config>test/e2e test/e2e>internal/localcluster",
			"shipped code: apis/config imports test/e2e (test code), reached from apis/config: apis/config"},
		{"Helm is no concern of shipped code's rule", "shipped code", "cardfit", "cardfit>helm.sh/helm/v3/pkg/chart",
			""},
		{"hami-local may run the local cluster", "binaries", "cmd/hami-local", "cmd/hami-local>internal/localcluster cmd/hami-local>internal/localcluster/simnode",
			""},
		{"a binary importing Helm", "binaries", "cmd/hami-local", "cmd/hami-local>internal/localcluster internal/localcluster>helm.sh/helm/v3/pkg/chart",
			"binaries: internal/localcluster imports helm.sh/helm/v3/pkg/chart (Helm), reached from cmd/hami-local: cmd/hami-local -> internal/localcluster"},
		{"a binary importing test and tool code", "binaries", "cmd/hami-local", "cmd/hami-local>hack/plots/charts cmd/hami-local>test/util/benchfigures",
			"binaries: cmd/hami-local imports hack/plots/charts (tool code (hack/)), reached from cmd/hami-local: cmd/hami-local\nbinaries: cmd/hami-local imports test/util/benchfigures (test code), reached from cmd/hami-local: cmd/hami-local"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i := slices.IndexFunc(depRules, func(r depRule) bool { return r.Name == tt.rule })
			if i < 0 {
				t.Fatalf("no rule %q", tt.rule)
			}
			rule := depRules[i]
			var roots []string
			for _, r := range strings.Fields(tt.roots) {
				roots = append(roots, inModule(r))
			}
			imports := map[string][]string{}
			for _, e := range strings.Fields(tt.graph) {
				from, to, _ := strings.Cut(e, ">")
				imports[inModule(from)] = append(imports[inModule(from)], inModule(to))
			}
			var got []string
			for _, v := range checkDeps(module, rule, roots, imports) {
				got = append(got, v.String(module))
			}
			if diff := cmp.Diff(tt.want, strings.Join(got, "\n")); diff != "" {
				t.Errorf("checkDeps (-want +got):\n%s", diff)
			}
		})
	}
}

// inModule is the import path of the module's package p; a path whose
// first element has a dot is another module's, kept as it is.
func inModule(p string) string {
	if first, _, _ := strings.Cut(p, "/"); strings.Contains(first, ".") {
		return p
	}
	return module + "/" + p
}

func TestKindOf(t *testing.T) {
	tests := []struct {
		path string
		want kind
	}{
		{module + "/test", testCode},
		{module + "/test/util/release", testCode},
		{module + "/devices/devicestest", testCode},
		{module + "/testing", ""},
		{module + "/hack/manifestgen", toolCode},
		{module + "/hackery", ""},
		{module + "/internal/localcluster", localCluster},
		{module + "/internal/localcluster/simnode", localCluster},
		{module + "/internal/fwcompat", ""},
		{"helm.sh/helm/v3/pkg/chart", helm},
		{"k8s.io/client-go/testing", ""},
		{"example.com/other/test", ""},
	}
	for _, tt := range tests {
		if got := kindOf(module, tt.path); got != tt.want {
			t.Errorf("kindOf(%s) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

func TestMatches(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"./plugins/...", module + "/plugins", true},
		{"./plugins/...", module + "/plugins/nodelock", true},
		{"./plugins/...", module + "/pluginsx", false},
		{"./cmd/hami-scheduler", module + "/cmd/hami-scheduler", true},
		{"./cmd/hami-scheduler", module + "/cmd/hami-scheduler/sub", false},
		{"./cmd/...", module + "/cmd/hami-local", true},
		{"./...", module + "/anything", true},
	}
	for _, tt := range tests {
		if got := matches(module, tt.pattern, tt.path); got != tt.want {
			t.Errorf("matches(%s, %s) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}
