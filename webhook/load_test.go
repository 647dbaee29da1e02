package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// TestServerAnswersEveryRequestUnderLoad sends a few thousand admission
// reviews from many clients at once over HTTPS: every one is answered with
// a valid review for its own UID. (Latency is measured by
// BenchmarkServerUnderLoad, not asserted here.)
func TestServerAnswersEveryRequestUnderLoad(t *testing.T) {
	s := startTestServer(t, ServerOptions{ReadTimeout: DefaultReadTimeout, WriteTimeout: DefaultWriteTimeout, MaxRequestBytes: DefaultMaxRequestBytes})
	latencies := loadServer(t, s, 32, 2000)
	if len(latencies) != 2000 {
		t.Fatalf("%d answers, want 2000", len(latencies))
	}
}

// BenchmarkServerUnderLoad reports admission latency percentiles with 32
// concurrent clients (see docs/benchmarks/webhook.md).
func BenchmarkServerUnderLoad(b *testing.B) {
	s := startTestServer(b, ServerOptions{ReadTimeout: DefaultReadTimeout, WriteTimeout: DefaultWriteTimeout, MaxRequestBytes: DefaultMaxRequestBytes})
	b.ResetTimer()
	start := time.Now()
	latencies := loadServer(b, s, 32, b.N)
	elapsed := time.Since(start)
	slices.Sort(latencies)
	b.ReportMetric(float64(len(latencies))/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds())/1000, "p99-ms")
}

// loadServer sends n reviews from clients goroutines and returns each
// answered request's latency; it fails the test for any request that is
// not answered with a review for its own UID.
func loadServer(tb testing.TB, s *testServer, clients, n int) []time.Duration {
	pod, err := json.Marshal(newPod(limits("nvidia.com/gpumem", "3000")))
	if err != nil {
		tb.Fatal(err)
	}
	bodies := make([][]byte, n)
	for i := range bodies {
		r := admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{
				UID:       types.UID(fmt.Sprintf("uid-%d", i)),
				Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
				Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
				Namespace: testNamespace,
				Operation: admissionv1.Create,
				Object:    runtime.RawExtension{Raw: pod},
			},
		}
		if bodies[i], err = json.Marshal(r); err != nil {
			tb.Fatal(err)
		}
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: s.cert.trusting(), MaxIdleConnsPerHost: clients,
	}}
	var (
		mu        sync.Mutex
		latencies []time.Duration
		failures  []string
		wg        sync.WaitGroup
		next      = make(chan int)
	)
	for range clients {
		wg.Go(func() {
			for i := range next {
				start := time.Now()
				resp, err := client.Post(s.url(MutatePath), "application/json", bytes.NewReader(bodies[i]))
				if err != nil {
					mu.Lock()
					failures = append(failures, err.Error())
					mu.Unlock()
					continue
				}
				var out admissionv1.AdmissionReview
				err = json.NewDecoder(resp.Body).Decode(&out)
				resp.Body.Close()
				took := time.Since(start)
				mu.Lock()
				if err != nil || out.Response == nil || string(out.Response.UID) != fmt.Sprintf("uid-%d", i) {
					failures = append(failures, fmt.Sprintf("request %d: status %d, %v", i, resp.StatusCode, err))
				} else {
					latencies = append(latencies, took)
				}
				mu.Unlock()
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, f := range failures[:min(len(failures), 5)] {
		tb.Errorf("unanswered: %s", f)
	}
	return latencies
}
