package perf

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/scheduler/profile"
)

var (
	nodesFlag  = flag.Int("nodes", 500, "BenchmarkThroughput: number of nodes")
	cardsFlag  = flag.Int("cards", 8, "BenchmarkThroughput: cards per node")
	modelFlag  = flag.String("model", "NVIDIA A100 40 GiB, split 10", "BenchmarkThroughput: card model, memory and split")
	podsFlag   = flag.Int("pods", 4000, "BenchmarkThroughput: pods per profile")
	policyFlag = flag.String("node-policy", "", "BenchmarkThroughput: HAMi node policy, binpack or spread (default: the plugin's)")
)

var logPath string

func TestMain(m *testing.M) {
	flag.Parse()
	logPath = filepath.Join(os.TempDir(), fmt.Sprintf("hami-perf-%d.log", os.Getpid()))
	f, err := os.Create(logPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Under load the apiserver's etcd client warns on stderr; keep that in
	// the log, which is named first in case the process dies.
	fmt.Printf("control plane and scheduler logs (removed on success): %s\n", logPath)
	console, err := localcluster.CaptureStderr(f)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Stderr = console
	verbosity, _ := strconv.Atoi(os.Getenv("PERF_VERBOSITY"))
	if err := localcluster.RedirectKlog(f, verbosity); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	f.Close()
	if code == 0 && os.Getenv("PERF_KEEP_LOG") == "" {
		_ = os.Remove(logPath)
	}
	os.Exit(code)
}

// BenchmarkThroughput is `make bench-e2e`: one run of Run sized by the
// flags; b.N is ignored (use -benchtime 1x).
func BenchmarkThroughput(b *testing.B) {
	opts := Options{
		Nodes:      fmt.Sprintf("%d nodes x %d cards of %s", *nodesFlag, *cardsFlag, *modelFlag),
		Pods:       *podsFlag,
		NodePolicy: devices.NodePolicy(*policyFlag),
		Seed:       1,
		Progress:   os.Stdout,
	}
	var r *Result
	for b.Loop() {
		var err error
		r, err = Run(context.Background(), opts)
		if err != nil {
			b.Fatal(err)
		}
	}
	r.Print(os.Stdout)
	b.ReportMetric(r.HAMi.PodsPerSecond(), "hami-pods/s")
	b.ReportMetric(r.Baseline.PodsPerSecond(), "baseline-pods/s")
	b.ReportMetric(r.Ratio(), "hami/baseline")
	b.ReportMetric(0, "ns/op")
	if len(r.Overcommitted) > 0 {
		b.Errorf("accounting problems: %v", r.Overcommitted)
	}
}

// A small run, part of `make test`: every pod of both backlogs is placed,
// the metrics and counters the benchmark reports are filled in, and no
// card is over-committed. The 64 cards outnumber the cards 40 pods can
// touch (at most 2 each), so a whole-card pod always finds an empty card
// whatever order the queue takes the backlog in (pods created in the same
// second tie); with fewer cards, spreading pods over cards could leave none
// empty and the smoke test would depend on that order.
func TestThroughputSmoke(t *testing.T) {
	r, err := Run(t.Context(), Options{Nodes: "8 nodes x 8 cards of NVIDIA A100 40 GiB, split 10", Pods: 40, Seed: 7, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	r.Print(&out)
	t.Log("\n" + out.String())
	for _, ph := range []Phase{r.Baseline, r.HAMi} {
		if ph.Bound != ph.Pods {
			t.Errorf("%s: %d/%d pods bound", ph.Profile, ph.Bound, ph.Pods)
		}
		if ph.PodsPerSecond() <= 0 || ph.Scheduled < float64(ph.Pods) || ph.AttemptP99 < ph.AttemptP50 || ph.AttemptP50 <= 0 {
			t.Errorf("%s: implausible figures %+v", ph.Profile, ph)
		}
		// Every pod is bound once through the API.
		if got := ph.Scheduler["POST pods/binding"]; got != int64(ph.Pods) {
			t.Errorf("%s: %d bindings posted, want %d", ph.Profile, got, ph.Pods)
		}
	}
	// HAMi writes each pod's assignment and takes the node lock.
	if r.HAMi.Scheduler["PATCH pods"] < int64(r.HAMi.Pods) || r.HAMi.Scheduler["PATCH nodes"] < int64(r.HAMi.Pods) {
		t.Errorf("hami: pod patches %d, node patches %d; want at least one each per pod", r.HAMi.Scheduler["PATCH pods"], r.HAMi.Scheduler["PATCH nodes"])
	}
	if r.Baseline.Scheduler["PATCH nodes"] != 0 || r.Baseline.Profile != profile.DefaultSchedulerName {
		t.Errorf("baseline profile %q patched nodes %d times; want %s, never", r.Baseline.Profile, r.Baseline.Scheduler["PATCH nodes"], profile.DefaultSchedulerName)
	}
	if len(r.Overcommitted) > 0 {
		t.Errorf("accounting problems: %v", r.Overcommitted)
	}
}
