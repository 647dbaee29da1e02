package perf

import (
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestResourceOf(t *testing.T) {
	for path, want := range map[string]string{
		"/api/v1/namespaces/ns/pods/p/binding":            "pods/binding",
		"/api/v1/namespaces/ns/pods/p":                    "pods",
		"/api/v1/namespaces/ns/pods":                      "pods",
		"/api/v1/nodes/n":                                 "nodes",
		"/api/v1/nodes":                                   "nodes",
		"/api/v1/namespaces/ns":                           "namespaces",
		"/apis/events.k8s.io/v1/namespaces/ns/events":     "events",
		"/apis/apps/v1/namespaces/ns/deployments/d/scale": "deployments/scale",
		"/api/v1":  "discovery",
		"/healthz": "/healthz",
	} {
		if got := resourceOf(path); got != want {
			t.Errorf("resourceOf(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestAPICounter(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPatch {
			w.WriteHeader(http.StatusConflict)
		}
	}))
	defer server.Close()
	c := newAPICounter()
	client := &http.Client{Transport: c.Wrap(http.DefaultTransport)}
	before := c.snapshot()
	for _, call := range []struct{ method, path string }{
		{http.MethodPost, "/api/v1/namespaces/ns/pods/p/binding"},
		{http.MethodPatch, "/api/v1/nodes/n"},
		{http.MethodGet, "/api/v1/nodes/n"},
		{http.MethodGet, "/api/v1/pods?watch=true"},
	} {
		req, _ := http.NewRequest(call.method, server.URL+call.path, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	d := delta(before, c.snapshot())
	want := callDelta{"POST pods/binding": 1, "PATCH nodes (409)": 1, "GET nodes": 1, "WATCH pods": 1}
	if len(d) != len(want) {
		t.Fatalf("counted %v, want %v", d, want)
	}
	for k, v := range want {
		if d[k] != v {
			t.Errorf("%s = %d, want %d (all: %v)", k, d[k], v, d)
		}
	}
	if w, r := d.total(true), d.total(false); w != 2 || r != 1 {
		t.Errorf("writes %d, reads %d; want 2 and 1 (watches are neither)", w, r)
	}
	if got := d.breakdown(true, 2); got != "PATCH nodes (409) 0.50, POST pods/binding 0.50" {
		t.Errorf("breakdown = %q", got)
	}
}

func TestHistogramQuantile(t *testing.T) {
	// 10 observations in (0, 0.01], 80 in (0.01, 0.02], 10 in (0.02, +Inf).
	h := histogram{bounds: []float64{0.01, 0.02, math.Inf(1)}, counts: []float64{10, 90, 100}}
	tests := []struct {
		q, want float64
	}{
		{0.05, 0.005},
		{0.5, 0.015},
		{0.9, 0.02},
		{0.99, math.Inf(1)}, // beyond the highest finite bound
	}
	for _, tt := range tests {
		if got := h.quantile(tt.q); got != tt.want && math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("quantile(%v) = %v, want %v", tt.q, got, tt.want)
		}
	}
	if !math.IsNaN((histogram{}).quantile(0.5)) {
		t.Error("empty histogram quantile is not NaN")
	}
}

// A scheduler's /metrics page read back: the attempt histogram of one
// profile and result, plugin means per extension point, histogram totals
// and gauges by label.
func TestParseMetrics(t *testing.T) {
	page := `# HELP scheduler_scheduling_attempt_duration_seconds x
# TYPE scheduler_scheduling_attempt_duration_seconds histogram
scheduler_scheduling_attempt_duration_seconds_bucket{profile="hami-scheduler",result="scheduled",le="0.01"} 10
scheduler_scheduling_attempt_duration_seconds_bucket{profile="hami-scheduler",result="scheduled",le="0.02"} 90
scheduler_scheduling_attempt_duration_seconds_bucket{profile="hami-scheduler",result="scheduled",le="+Inf"} 100
scheduler_scheduling_attempt_duration_seconds_sum{profile="hami-scheduler",result="scheduled"} 1.5
scheduler_scheduling_attempt_duration_seconds_count{profile="hami-scheduler",result="scheduled"} 100
scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="scheduled",le="0.01"} 3
scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="scheduled",le="0.02"} 3
scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="scheduled",le="+Inf"} 3
scheduler_scheduling_attempt_duration_seconds_sum{profile="default-scheduler",result="scheduled"} 0.01
scheduler_scheduling_attempt_duration_seconds_count{profile="default-scheduler",result="scheduled"} 3
# HELP scheduler_plugin_execution_duration_seconds x
# TYPE scheduler_plugin_execution_duration_seconds histogram
scheduler_plugin_execution_duration_seconds_bucket{extension_point="Filter",plugin="HAMi",status="Success",le="+Inf"} 4
scheduler_plugin_execution_duration_seconds_sum{extension_point="Filter",plugin="HAMi",status="Success"} 0.004
scheduler_plugin_execution_duration_seconds_count{extension_point="Filter",plugin="HAMi",status="Success"} 4
scheduler_plugin_execution_duration_seconds_bucket{extension_point="Filter",plugin="HAMi",status="Unschedulable",le="+Inf"} 1
scheduler_plugin_execution_duration_seconds_sum{extension_point="Filter",plugin="HAMi",status="Unschedulable"} 0.006
scheduler_plugin_execution_duration_seconds_count{extension_point="Filter",plugin="HAMi",status="Unschedulable"} 1
scheduler_plugin_execution_duration_seconds_bucket{extension_point="Score",plugin="HAMi",status="Success",le="+Inf"} 2
scheduler_plugin_execution_duration_seconds_sum{extension_point="Score",plugin="HAMi",status="Success"} 0.1
scheduler_plugin_execution_duration_seconds_count{extension_point="Score",plugin="HAMi",status="Success"} 2
# HELP hami_scheduler_cache_size x
# TYPE hami_scheduler_cache_size gauge
hami_scheduler_cache_size{kind="nodes"} 8
hami_scheduler_cache_size{kind="cards"} 64
# HELP rest_client_requests_total x
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="PATCH"} 40
rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 40
rest_client_requests_total{code="409",host="127.0.0.1:6443",method="PATCH"} 2
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 5
# HELP rest_client_request_duration_seconds x
# TYPE rest_client_request_duration_seconds histogram
rest_client_request_duration_seconds_bucket{host="127.0.0.1:6443",verb="PATCH",le="+Inf"} 42
rest_client_request_duration_seconds_sum{host="127.0.0.1:6443",verb="PATCH"} 0.42
rest_client_request_duration_seconds_count{host="127.0.0.1:6443",verb="PATCH"} 42
rest_client_request_duration_seconds_bucket{host="127.0.0.1:6443",verb="POST",le="+Inf"} 40
rest_client_request_duration_seconds_sum{host="127.0.0.1:6443",verb="POST"} 1.22
rest_client_request_duration_seconds_count{host="127.0.0.1:6443",verb="POST"} 40
`
	m, err := parseMetrics([]byte(page))
	if err != nil {
		t.Fatal(err)
	}
	if h := m.attempts("hami-scheduler", "scheduled"); h.count() != 100 || math.Abs(h.quantile(0.5)-0.015) > 1e-9 || !math.IsInf(h.quantile(0.99), 1) || len(h.bounds) != 3 {
		t.Errorf("hami-scheduler attempts: count %v, median %v, p99 %v, bounds %v; want 100, 0.015, +Inf, 3 bounds", h.count(), h.quantile(0.5), h.quantile(0.99), h.bounds)
	}
	if h := m.attempts("hami-scheduler", "unschedulable"); h.count() != 0 {
		t.Errorf("unschedulable attempts: count %v, want 0", h.count())
	}
	if got := m.pluginMeans("Filter")["HAMi"]; got != 2*time.Millisecond {
		t.Errorf("HAMi's Filter mean %v, want 2ms over both statuses", got)
	}
	if got := m.histogramTotals(attemptMetric, map[string]string{"result": "scheduled"}); got.count != 103 {
		t.Errorf("attempts of every profile: %v, want 103", got.count)
	}
	if s := cacheStats(m); s.Nodes != 8 || s.Cards != 64 || s.Pods != 0 {
		t.Errorf("cache stats %+v, want 8 nodes, 64 cards, no pods", s)
	}
	calls := clientCalls(m)
	if calls["PATCH"] != 40 || calls["PATCH (409)"] != 2 || calls["POST"] != 40 || calls.total(true) != 82 || calls.total(false) != 5 {
		t.Errorf("client calls %v: want 40 PATCH, 2 refused, 40 POST, 5 GET", calls)
	}
	if got := clientLatency(m); got != 20*time.Millisecond {
		t.Errorf("client latency %v, want 20ms", got)
	}
	if _, err := parseMetrics([]byte("not a metric page {")); err == nil {
		t.Error("a malformed page parsed")
	}
}
