package perf

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// apiCounter counts the API calls made through a client, by verb and
// resource ("PATCH nodes", "POST pods/binding"), marking the ones that
// failed with their status ("PATCH nodes (409)").
type apiCounter struct {
	mu     sync.Mutex
	counts map[string]int64
	// spent is the time the counted requests took in the transport (not
	// in a client's rate limiter, which waits before it), in all.
	spent time.Duration
}

func newAPICounter() *apiCounter { return &apiCounter{counts: map[string]int64{}} }

// Wrap counts the requests that go through rt.
func (c *apiCounter) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		verb := req.Method
		if verb == http.MethodGet && req.URL.Query().Get("watch") == "true" {
			verb = "WATCH"
		}
		key := verb + " " + resourceOf(req.URL.Path)
		start := time.Now()
		resp, err := rt.RoundTrip(req)
		took := time.Since(start)
		switch {
		case err != nil:
			key += " (failed)"
		case resp.StatusCode >= 400:
			key += " (" + strconv.Itoa(resp.StatusCode) + ")"
		}
		c.mu.Lock()
		c.counts[key]++
		if verb != "WATCH" {
			c.spent += took
		}
		c.mu.Unlock()
		return resp, err
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// spentSoFar is the time the requests (watches aside) took so far.
func (c *apiCounter) spentSoFar() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.spent
}

// snapshot copies the counts.
func (c *apiCounter) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

// callDelta is the calls made between two snapshots.
type callDelta map[string]int64

func delta(before, after map[string]int64) callDelta {
	d := callDelta{}
	for k, v := range after {
		if n := v - before[k]; n > 0 {
			d[k] = n
		}
	}
	return d
}

// isWrite reports whether a counted call changes state.
func isWrite(key string) bool {
	verb, _, _ := strings.Cut(key, " ")
	switch verb {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// total sums the writes (or the reads: GET and LIST, not watches).
func (d callDelta) total(writes bool) int64 {
	var n int64
	for k, v := range d {
		if strings.HasPrefix(k, "WATCH ") {
			continue
		}
		if isWrite(k) == writes {
			n += v
		}
	}
	return n
}

// breakdown renders the writes (or reads) per pod, largest first, e.g.
// "POST pods/binding 1.00, PATCH nodes 1.02".
func (d callDelta) breakdown(writes bool, pods int) string {
	type kv struct {
		k string
		v int64
	}
	var items []kv
	for k, v := range d {
		if strings.HasPrefix(k, "WATCH ") || isWrite(k) != writes {
			continue
		}
		items = append(items, kv{k, v})
	}
	sort.Slice(items, func(i, j int) bool {
		if items[i].v != items[j].v {
			return items[i].v > items[j].v
		}
		return items[i].k < items[j].k
	})
	var parts []string
	for _, it := range items {
		parts = append(parts, it.k+" "+ratio(float64(it.v), float64(pods)))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// resourceOf turns an API path into resource[/subresource]:
// /api/v1/namespaces/ns/pods/p/binding -> pods/binding.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return path
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		if len(parts) == 2 {
			return "namespaces"
		}
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
		return "discovery"
	case 1, 2:
		return parts[0]
	default:
		return parts[0] + "/" + parts[2]
	}
}

// calls sums the reads and writes (not watches).
func (d callDelta) calls() int64 { return d.total(true) + d.total(false) }
