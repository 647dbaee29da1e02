package perf

import (
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
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
	earlier := histogram{bounds: h.bounds, counts: []float64{10, 10, 10}}
	if d := h.since(earlier); d.count() != 90 || math.Abs(d.quantile(0.5)-0.015625) > 1e-9 {
		t.Errorf("since: count %v, median %v; want 90 and 0.015625", d.count(), d.quantile(0.5))
	}
	if !math.IsNaN((histogram{}).quantile(0.5)) {
		t.Error("empty histogram quantile is not NaN")
	}
}
