package main

import (
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hami-scheduler/hami-scheduler/plugins"
)

// TestMetricsHandlerLeaderOnly: with leader election on, HAMi's device
// gauges are served only while the leader-election gauge says this process
// leads (not before its elector exists either); the other series always;
// without leader election, everything.
func TestMetricsHandlerLeaderOnly(t *testing.T) {
	tests := []struct {
		name         string
		leaderElects bool
		// leader is the leader-election gauge's value; nil: no series.
		leader      *float64
		wantDevices bool
	}{
		{name: "no leader election", leaderElects: false, wantDevices: true},
		{name: "leading", leaderElects: true, leader: floatPtr(1), wantDevices: true},
		{name: "standby", leaderElects: true, leader: floatPtr(0), wantDevices: false},
		{name: "elector not made yet", leaderElects: true, wantDevices: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			device := prometheus.NewGauge(prometheus.GaugeOpts{Name: plugins.DeviceGauges[0], Help: "a card"})
			device.Set(42)
			own := prometheus.NewGauge(prometheus.GaugeOpts{Name: "hami_scheduler_cache_size", Help: "the cache"})
			reg.MustRegister(device, own)
			if tt.leader != nil {
				g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: leaderGauge, Help: "leading"}, []string{"name"})
				g.WithLabelValues("kube-scheduler").Set(*tt.leader)
				reg.MustRegister(g)
			}
			rec := httptest.NewRecorder()
			metricsHandler(reg, tt.leaderElects).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			body, _ := io.ReadAll(rec.Body)
			if got := strings.Contains(string(body), plugins.DeviceGauges[0]+" 42"); got != tt.wantDevices {
				t.Errorf("device gauge served %v, want %v:\n%s", got, tt.wantDevices, body)
			}
			if !strings.Contains(string(body), "hami_scheduler_cache_size 0") {
				t.Errorf("the process's own series is missing:\n%s", body)
			}
		})
	}
}

// TestLeaderElection: on by default, as the --config file says, and as an
// explicit --leader-elect says over the file.
func TestLeaderElection(t *testing.T) {
	dir := t.TempDir()
	off := filepath.Join(dir, "off.yaml")
	if err := os.WriteFile(off, []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection:\n  leaderElect: false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want bool
	}{
		{args: nil, want: true},
		{args: []string{"--leader-elect=false"}, want: false},
		{args: []string{"--config=" + off}, want: false},
		{args: []string{"--config=" + off, "--leader-elect=true"}, want: true},
	}
	for _, tt := range tests {
		cmd := newCommand()
		if err := cmd.ParseFlags(tt.args); err != nil {
			t.Fatal(err)
		}
		got, err := leaderElection(cmd)
		if err != nil || got != tt.want {
			t.Errorf("leaderElection(%q) = %v, %v; want %v", tt.args, got, err, tt.want)
		}
	}
}

func floatPtr(v float64) *float64 { return &v }
