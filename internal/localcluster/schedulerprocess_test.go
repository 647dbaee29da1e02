package localcluster

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/hami-scheduler/hami-scheduler/manifests"
)

// TestShippedSchedulerCommand: the process gets the shipped container's
// arguments and environment, with the ConfigMap's mount point moved to
// the process's directory.
func TestShippedSchedulerCommand(t *testing.T) {
	dir := t.TempDir()
	deployment, err := shippedSchedulerDeployment()
	if err != nil {
		t.Fatal(err)
	}
	args, env, err := schedulerCommand(deployment, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(args, "--config="+dir+"/scheduler-config.yaml") {
		t.Errorf("args %q do not read the configuration from %s", args, dir)
	}
	for _, a := range args {
		if strings.Contains(a, shippedConfigDir+"/") {
			t.Errorf("arg %q still names the mount point", a)
		}
	}
	if !slices.Contains(env, "HAMI_NODELOCK_EXPIRE=5m") {
		t.Errorf("env %q lacks the shipped HAMI_NODELOCK_EXPIRE", env)
	}
}

// TestShippedSchedulerConfig: the written configuration is the shipped one
// with only clientConnection.kubeconfig added.
func TestShippedSchedulerConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scheduler-config.yaml")
	if err := writeSchedulerConfig(path, manifests.SchedulerConfigYAML, "/k/kubeconfig"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		ClientConnection map[string]any   `json:"clientConnection"`
		Profiles         []map[string]any `json:"profiles"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.ClientConnection["kubeconfig"] != "/k/kubeconfig" || cfg.ClientConnection["qps"] != float64(400) {
		t.Errorf("clientConnection %v, want the shipped one with the kubeconfig", cfg.ClientConnection)
	}
	if len(cfg.Profiles) != 1 || cfg.Profiles[0]["schedulerName"] != "hami-scheduler" {
		t.Errorf("profiles %v, want the shipped hami-scheduler profile", cfg.Profiles)
	}
}

// TestMovePlainMetrics: the plain metrics listener moves to the loopback
// port given; none is added where the container starts none.
func TestMovePlainMetrics(t *testing.T) {
	tests := []struct {
		args     []string
		wantArgs []string
		wantAddr string
	}{
		{args: []string{"--v=2", "--hami-metrics-bind-address=:9395"}, wantArgs: []string{"--v=2", "--hami-metrics-bind-address=127.0.0.1:4242"}, wantAddr: "127.0.0.1:4242"},
		{args: []string{"--v=2"}, wantArgs: []string{"--v=2"}},
		{args: []string{"--hami-metrics-bind-address="}, wantArgs: []string{"--hami-metrics-bind-address="}},
	}
	for _, tt := range tests {
		args, addr := movePlainMetrics(tt.args, 4242)
		if !slices.Equal(args, tt.wantArgs) || addr != tt.wantAddr {
			t.Errorf("movePlainMetrics(%q) = %q, %q; want %q, %q", tt.args, args, addr, tt.wantArgs, tt.wantAddr)
		}
	}
}
