package simnode

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// apiStub answers every request with a node and counts the connections
// opened to it.
func apiStub(t *testing.T) (*rest.Config, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1"}}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}, &conns
}

// Each client made for a node has a token bucket of its own (qps, burst):
// one node's calls beyond its burst wait, another node's do not; without a
// limit nothing waits. All clients share one connection.
func TestClientRateLimits(t *testing.T) {
	tests := []struct {
		name       string
		qps        float32
		burst      int
		calls      int
		minElapsed time.Duration
		maxElapsed time.Duration
	}{
		{name: "within the burst: no wait", qps: 5, burst: 10, calls: 10, maxElapsed: 150 * time.Millisecond},
		// 10 calls at once, then one every 1/20 s: 4 more take 200 ms.
		{name: "beyond the burst: qps", qps: 20, burst: 10, calls: 14, minElapsed: 150 * time.Millisecond, maxElapsed: 600 * time.Millisecond},
		{name: "burst below one is one", qps: 20, burst: 0, calls: 5, minElapsed: 150 * time.Millisecond, maxElapsed: 600 * time.Millisecond},
		{name: "negative qps: no limit", qps: -1, burst: 0, calls: 100, maxElapsed: 500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, conns := apiStub(t)
			maker, err := newClientMaker(cfg, nil, tt.qps, tt.burst)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			get := func(n int, maker *clientMaker) time.Duration {
				t.Helper()
				c, err := maker.client()
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				for range n {
					if _, err := c.Nodes().Get(ctx, "n1", metav1.GetOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				return time.Since(start)
			}
			if d := get(tt.calls, maker); d < tt.minElapsed || d > tt.maxElapsed {
				t.Errorf("first node: %d calls took %s, want %s to %s", tt.calls, d, tt.minElapsed, tt.maxElapsed)
			}
			// A second node's client has its full burst.
			if n := max(tt.burst, 1); tt.qps > 0 {
				if d := get(n, maker); d > 150*time.Millisecond {
					t.Errorf("second node: %d calls took %s; its limiter is not its own", n, d)
				}
			}
			if got := conns.Load(); got != 1 {
				t.Errorf("%d connections opened, want 1 shared by all clients", got)
			}
		})
	}
}

func TestOptionsDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   Options
		want Options
	}{
		{name: "zero value: faithful with HAMi's limits",
			want: Options{Workers: 16, DevicePluginQPS: 5, DevicePluginBurst: 10, KubeletQPS: 50, KubeletBurst: 100, AdmissionDelay: 100 * time.Millisecond}},
		{name: "fast: no limits, no delay",
			in:   Options{Fast: true, AdmissionDelay: time.Second},
			want: Options{Workers: 16, Fast: true, DevicePluginQPS: -1, DevicePluginBurst: 10, KubeletQPS: -1, KubeletBurst: 100}},
		{name: "settable",
			in:   Options{Workers: 4, DevicePluginQPS: 50, DevicePluginBurst: 100, KubeletQPS: -1, AdmissionDelay: -1},
			want: Options{Workers: 4, DevicePluginQPS: 50, DevicePluginBurst: 100, KubeletQPS: -1, KubeletBurst: 100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in
			got.defaults()
			if got.String() == "" || got.Workers != tt.want.Workers || got.Fast != tt.want.Fast ||
				got.DevicePluginQPS != tt.want.DevicePluginQPS || got.DevicePluginBurst != tt.want.DevicePluginBurst ||
				got.KubeletQPS != tt.want.KubeletQPS || got.KubeletBurst != tt.want.KubeletBurst || got.AdmissionDelay != tt.want.AdmissionDelay {
				t.Errorf("defaults() = %+v, want %+v", got, tt.want)
			}
		})
	}
}
