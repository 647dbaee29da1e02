package perf

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/component-base/version"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/hack/manifestgen"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
	"github.com/hami-scheduler/hami-scheduler/scheduler/profile"
)

var (
	nodesFlag  = flag.String("nodes", "200", "BenchmarkThroughput: number of nodes, optionally with their cards per node (20x4); several, separated by commas, run one after the other (e.g. 200,1000,2000 or 20x4,200x8)")
	cardsFlag  = flag.Int("cards", 8, "BenchmarkThroughput: cards per node of the sizes that name none")
	modelFlag  = flag.String("model", "NVIDIA A100 40 GiB, split 10", "BenchmarkThroughput: card model, memory and split")
	podsFlag   = flag.String("pods", "1000", "BenchmarkThroughput: pods per phase; one count per node count, or one for all")
	policyFlag = flag.String("policies", "binpack,binpack/q0,spread,binpack/q1", "BenchmarkThroughput: HAMi settings to run: a policy (binpack, spread) setting the node and the card policy, with the shipped queue bounds or, after /qN, nodeQueueLimit N and nodeQueueWait 0 (e.g. binpack/q1; binpack/q0: none, HAMi's order), after /wD nodeQueueWait D, after /bD burstQueueWait D (e.g. binpack/b10s)")
	arrivals   = flag.String("arrivals", "backlog,steady", "BenchmarkThroughput: HAMi arrivals to run: backlog, steady")
	rateFlag   = flag.String("rate", "0", "BenchmarkThroughput: steady arrival rates in pods/s, each a phase of its own per setting, separated by commas (e.g. 10,20,30; 0: half the same policy's backlog pods/s)")
	results    = flag.String("results", "", "BenchmarkThroughput: a file to write the run's figures into as JSON (test/util/benchfigures), which make plots draws")
	nodeSide   = flag.String("node-side", "faithful", "BenchmarkThroughput: simulated device plugins and kubelets: faithful (HAMi's client limits, admission delay) or fast")
	dpQPS      = flag.Float64("device-plugin-qps", simnode.DefaultDevicePluginQPS, "BenchmarkThroughput: QPS of each node's device plugin client (negative: no limit)")
	dpBurst    = flag.Int("device-plugin-burst", simnode.DefaultDevicePluginBurst, "BenchmarkThroughput: burst of each node's device plugin client")
	phaseLimit = flag.Duration("phase-timeout", 20*time.Minute, "BenchmarkThroughput: bound of each phase; pods not Running by then are reported")
	admission  = flag.Duration("admission-delay", simnode.DefaultAdmissionDelay, "BenchmarkThroughput: kubelet admission delay (0: none)")
	repeat     = flag.Int("runs", 1, "BenchmarkThroughput: runs of each HAMi phase, one after the other, for the median and the slowest (a table per setting over its runs)")
	checkRules = flag.Bool("check-rules", false, "BenchmarkThroughput: fail when binpack as shipped breaks one of its rules (printed either way): bursts against HAMi's order (binpack/q0) and their own bound, steady arrivals against their rate")
	profileDir = flag.String("phase-cpuprofile", "", "BenchmarkThroughput: a directory to write CPU profiles of each phase into, from the scheduler's start to the last pod Running: the cluster (this process) and the scheduler process (in 10 s pieces)")
)

var (
	logPath string
	// logFile receives the control plane's and the schedulers' logs.
	logFile *os.File
	// schedulerBinary is the hami-scheduler build the phases run.
	schedulerBinary string
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	// hami-scheduler refuses an API server of no release; the in-process
	// one reports the release the test binary is stamped with.
	if v := version.Get().GitVersion; !strings.HasPrefix(v, "v1.") {
		fmt.Printf("perf: the in-process API server would report version %q, which hami-scheduler refuses: run make test-unit or make bench-e2e, which stamp the test binary (TEST_LDFLAGS)\n", v)
		os.Exit(m.Run())
	}
	binDir, err := os.MkdirTemp("", "hami-perf-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	schedulerBinary = filepath.Join(binDir, "hami-scheduler")
	build := exec.Command("go", "build", "-o", schedulerBinary, "./cmd/hami-scheduler")
	build.Dir = manifestgen.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build hami-scheduler: %v\n%s", err, out)
		os.Exit(1)
	}
	code := run(m)
	os.RemoveAll(binDir)
	os.Exit(code)
}

func run(m *testing.M) int {
	logPath = filepath.Join(os.TempDir(), fmt.Sprintf("hami-perf-%d.log", os.Getpid()))
	f, err := os.Create(logPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Under load the apiserver's etcd client warns on stderr; keep that in
	// the log, which is named first in case the process dies.
	fmt.Printf("control plane and scheduler logs (removed on success): %s\n", logPath)
	console, err := localcluster.CaptureStderr(f)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	os.Stderr = console
	logFile = f
	verbosity, _ := strconv.Atoi(os.Getenv("PERF_VERBOSITY"))
	if err := localcluster.RedirectKlog(f, verbosity); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	f.Close()
	if code == 0 && os.Getenv("PERF_KEEP_LOG") == "" {
		_ = os.Remove(logPath)
	}
	return code
}

// needScheduler skips a test or benchmark that has no hami-scheduler
// build to run (TestMain says why).
func needScheduler(tb testing.TB) {
	tb.Helper()
	if schedulerBinary == "" {
		tb.Skip("no hami-scheduler build: the test binary is not stamped with a Kubernetes release (make test-unit and make bench-e2e stamp it)")
	}
}

// BenchmarkThroughput is `make bench-e2e`: one run of Run sized by the
// flags; b.N is ignored (use -benchtime 1x).
func BenchmarkThroughput(b *testing.B) {
	needScheduler(b)
	sizes, podCounts, err := ParseSizes(*nodesFlag, *podsFlag)
	if err != nil {
		b.Fatal(err)
	}
	rates, err := ParseRates(*rateFlag)
	if err != nil {
		b.Fatal(err)
	}
	opts := Options{
		Rates:           rates,
		Repeat:          *repeat,
		Timeout:         *phaseLimit,
		Seed:            1,
		Progress:        os.Stdout,
		ProfileDir:      *profileDir,
		SchedulerBinary: schedulerBinary,
		SchedulerLog:    logFile,
		NodeSide:        simnode.Options{DevicePluginQPS: float32(*dpQPS), DevicePluginBurst: *dpBurst, AdmissionDelay: *admission},
	}
	if opts.NodeSide.AdmissionDelay == 0 {
		opts.NodeSide.AdmissionDelay = -1
	}
	switch *nodeSide {
	case "faithful":
	case "fast":
		opts.NodeSide.Fast = true
	default:
		b.Fatalf("-node-side=%s: want faithful or fast", *nodeSide)
	}
	for p := range strings.SplitSeq(*policyFlag, ",") {
		s, err := ParseSetting(p)
		if err != nil {
			b.Fatalf("-policies: %v", err)
		}
		opts.Settings = append(opts.Settings, s)
	}
	for a := range strings.SplitSeq(*arrivals, ",") {
		opts.Arrivals = append(opts.Arrivals, Arrival(strings.TrimSpace(a)))
	}
	var runs []*Result
	for b.Loop() {
		runs = runs[:0]
		for i, size := range sizes {
			o := opts
			cards := cmp.Or(size.Cards, *cardsFlag)
			o.Nodes, o.Pods = fmt.Sprintf("%d nodes x %d cards of %s", size.Nodes, cards, *modelFlag), podCounts[i]
			r, err := Run(context.Background(), o)
			if err != nil {
				b.Fatal(err)
			}
			r.Print(os.Stdout)
			runs = append(runs, r)
		}
	}
	if len(runs) > 1 {
		PrintSizes(os.Stdout, runs)
	}
	PrintRepeats(os.Stdout, runs)
	if !PrintRules(os.Stdout, Rules(runs)) && *checkRules {
		b.Error("binpack as shipped broke a rule (above)")
	}
	if *results != "" {
		now := time.Now().UTC()
		f := Figures(runs, "make bench-e2e, "+now.Format("2006-01-02 15:04 MST"), benchCommand(), now.Format(time.RFC3339))
		if err := WriteFigures(*results, f); err != nil {
			b.Error(err)
		} else {
			fmt.Printf("figures written to %s (make plots draws them)\n", *results)
		}
	}
	for _, r := range runs {
		prefix := ""
		if len(runs) > 1 {
			prefix = fmt.Sprintf("%dnodes-", r.Nodes)
		}
		b.ReportMetric(r.Baseline().PodsPerSecond(), prefix+"baseline-pods/s")
		for _, p := range r.Phases[1:] {
			b.ReportMetric(p.PodsPerSecond(), fmt.Sprintf("%s%s-%s-pods/s", prefix, p.Arrival, strings.ReplaceAll(p.Setting.String(), "/", "-")))
		}
		if len(r.Overcommitted) > 0 {
			b.Errorf("%d nodes: accounting problems: %v", r.Nodes, r.Overcommitted)
		}
	}
	b.ReportMetric(0, "ns/op")
}

// benchCommand is the benchmark's command line: its flags as set.
func benchCommand() string {
	cmd := "go test -run '^$' -bench '^BenchmarkThroughput$' -benchtime 1x ./test/perf -args"
	flag.Visit(func(f *flag.Flag) {
		if !strings.HasPrefix(f.Name, "test.") && f.Name != "results" {
			cmd += fmt.Sprintf(" -%s=%s", f.Name, f.Value)
		}
	})
	return cmd
}

// A small run, part of `make test`, on the faithful node side (with the
// device plugins' limit raised tenfold to keep it short): every pod of
// every phase gets to Running, the figures the benchmark reports are
// filled in, and no card is over-committed. The 64 cards outnumber the
// cards 20 pods can touch (at most 2 each), so a whole-card pod always
// finds an empty card whatever order the queue takes the backlog in (pods
// created in the same second tie); with fewer cards, spreading pods over
// cards could leave none empty and the smoke test would depend on that
// order.
func TestThroughputSmoke(t *testing.T) {
	r := runSmoke(t, []Setting{{Policy: devices.NodeBinpack}, {Policy: devices.NodeSpread, QueueLimit: 2, SetQueueLimit: true}}, []Arrival{Backlog, Steady})
	for _, ph := range r.Phases {
		if ph.PodsPerSecond() <= 0 || ph.Scheduled < float64(ph.Pods) || ph.AttemptP99 < ph.AttemptP50 || ph.AttemptP50 <= 0 ||
			ph.RunP50 <= 0 || ph.RunP99 < ph.RunP50 {
			t.Errorf("%s: implausible figures %+v", ph.Name(), ph)
		}
		// Every pod is bound and gets its Scheduled event (the scheduler's
		// client metrics count by method: both are POSTs), and is
		// reported Running once by its kubelet.
		if got := ph.Scheduler["POST"]; got < 2*int64(ph.Pods) {
			t.Errorf("%s: %d POSTs, want a binding and an event per pod, %d", ph.Name(), got, 2*ph.Pods)
		}
		if ph.AlgorithmPerPod() <= 0 || ph.Cache.Nodes != 8 || ph.Cache.Cards != 64 {
			t.Errorf("%s: algorithm per pod %s, device cache %+v; want a time, 8 nodes and 64 cards", ph.Name(), ph.AlgorithmPerPod(), ph.Cache)
		}
		if p := ph.Packing; p.Cards < p.MinCards || p.Nodes < p.MinNodes || p.MinCards <= 0 || p.MinNodes <= 0 {
			t.Errorf("%s: implausible packing %+v", ph.Name(), p)
		}
	}
	// A fresh scheduler's reads at its start (its informers' lists and
	// watches, discovery, its lease), as the baseline's process made them.
	startReads := r.Baseline().Scheduler.total(false)
	for _, ph := range r.Phases[1:] {
		// HAMi writes each pod's assignment and takes the node lock; the
		// device plugin finds the pod through the lock, erases, re-reads,
		// sets success and releases: at least 8 calls per pod.
		if got := ph.Scheduler["PATCH"]; got < 2*int64(ph.Pods) {
			t.Errorf("%s: %d PATCHes, want an assignment and a node lock per pod, %d", ph.Name(), got, 2*ph.Pods)
		}
		if got := ph.DevicePlugin.calls(); got < 8*int64(ph.Pods) {
			t.Errorf("%s: %d device plugin calls, want at least 8 per pod", ph.Name(), got)
		}
		// The lock is read from the informers' stores, not polled.
		if got := ph.Scheduler.total(false) - startReads; got*2 > int64(ph.Pods) {
			t.Errorf("%s: %d scheduler reads besides its start's %d, want at most 0.5 per pod (%s)", ph.Name(), got, startReads, ph.Scheduler.breakdown(false, ph.Bound))
		}
	}
	// A binpack backlog queues its pods on one node: their hand-overs are
	// measured.
	if ph, ok := r.Find(Setting{Policy: devices.NodeBinpack}, Backlog); !ok || ph.HandOvers == 0 || ph.HandOverP99 < ph.HandOverP50 {
		t.Errorf("binpack backlog: %d hand-overs measured, p50 %s, p99 %s", ph.HandOvers, ph.HandOverP50, ph.HandOverP99)
	}
	if b := r.Baseline(); b.Scheduler["PATCH"] != 0 || b.Profile != profile.DefaultSchedulerName || b.DevicePlugin.calls() != 0 {
		t.Errorf("baseline profile %q patched %d times, device plugin calls %d; want %s, never, none",
			b.Profile, b.Scheduler["PATCH"], b.DevicePlugin.calls(), profile.DefaultSchedulerName)
	}
	if len(r.Overcommitted) > 0 {
		t.Errorf("accounting problems: %v", r.Overcommitted)
	}
}

// The DRA settings in a small run, part of `make test`: half the nodes
// DRA nodes (spread, so that the pods land on both kinds), all of them,
// and all of them with the pods taking HAMi-DRA's route, beside the same
// pods on device-plugin nodes alone. Every pod gets to Running; every
// one on a DRA node with each of its claims allocated on its node and
// reserved for it; the DRA cards are counted; nothing is over-committed
// (by annotations, by claims, or as the simulated drivers see it).
func TestThroughputSmokeDRA(t *testing.T) {
	var settings []Setting
	for _, s := range []string{"binpack", "spread/dra50", "binpack/dra100", "binpack/dra100/hami-dra"} {
		setting, err := ParseSetting(s)
		if err != nil {
			t.Fatal(err)
		}
		settings = append(settings, setting)
	}
	r := runSmoke(t, settings, []Arrival{Backlog})
	for _, ph := range r.Phases {
		if ph.Setting.DRAPercent == 0 {
			if ph.DRAPods != 0 || ph.Packing.DRACards != 0 {
				t.Errorf("%s: %d pods on DRA nodes, %d DRA cards; want none", ph.Name(), ph.DRAPods, ph.Packing.DRACards)
			}
			continue
		}
		if ph.DRAReserved != ph.DRAPods || ph.Packing.DRACards == 0 || ph.Packing.DRACards > ph.Packing.Cards {
			t.Errorf("%s: %d pods on DRA nodes, %d with their claims reserved; %d DRA cards of %d; want all reserved, DRA cards counted",
				ph.Name(), ph.DRAPods, ph.DRAReserved, ph.Packing.DRACards, ph.Packing.Cards)
		}
		if p := ph.Packing; p.Cards < p.MinCards || p.Nodes < p.MinNodes || p.MinCards <= 0 || p.FreeNodes != 8-p.Nodes {
			t.Errorf("%s: implausible packing %+v", ph.Name(), p)
		}
		switch {
		case ph.Setting.DRAPercent == 100 && ph.DRAPods != ph.Pods:
			t.Errorf("%s: %d of %d pods on DRA nodes, want all", ph.Name(), ph.DRAPods, ph.Pods)
		case ph.Setting.DRAPercent == 50 && (ph.DRAPods == 0 || ph.DRAPods == ph.Pods):
			t.Errorf("%s: %d of %d pods on DRA nodes, want some on each kind", ph.Name(), ph.DRAPods, ph.Pods)
		}
		wantProfile := profile.SchedulerName
		if ph.Setting.HAMiDRA {
			wantProfile = profile.DefaultSchedulerName
		}
		if ph.Profile != wantProfile || ph.Scheduled < float64(ph.Pods) {
			t.Errorf("%s: profile %s scheduled %.0f pods; want %s, %d", ph.Name(), ph.Profile, ph.Scheduled, wantProfile, ph.Pods)
		}
	}
	if len(r.Overcommitted) > 0 {
		t.Errorf("accounting problems: %v", r.Overcommitted)
	}
}

// runSmoke runs the smoke tests' cluster, 8 nodes x 8 cards and 20 pods
// per phase, with the settings and arrivals (steady ones at 20 pods/s) on
// the faithful node side, the device plugins' limit raised tenfold, and
// checks what every phase must show: each of the baseline's and the
// settings' phases ran, every pod bound and reported Running once by its
// kubelet, and the figures -results writes for make plots validate.
func runSmoke(t *testing.T, settings []Setting, arrivals []Arrival) *Result {
	t.Helper()
	needScheduler(t)
	r, err := Run(t.Context(), Options{Nodes: "8 nodes x 8 cards of NVIDIA A100 40 GiB, split 10", Pods: 20, Seed: 7, Timeout: 2 * time.Minute,
		SchedulerBinary: schedulerBinary, SchedulerLog: logFile, Settings: settings, Arrivals: arrivals, Rates: []float64{20},
		NodeSide: simnode.Options{DevicePluginQPS: 50, DevicePluginBurst: 100}})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	r.Print(&out)
	t.Log("\n" + out.String())
	if want := 1 + len(settings)*len(arrivals); len(r.Phases) != want {
		t.Fatalf("%d phases, want the baseline and %d settings x %d arrivals", len(r.Phases), len(settings), len(arrivals))
	}
	if errs := Figures([]*Result{r}, "smoke", t.Name(), "").Validate(); len(errs) > 0 {
		t.Errorf("the run's figures do not validate: %v", errs)
	}
	for _, ph := range r.Phases {
		if ph.Running != ph.Pods || ph.Bound != ph.Pods {
			t.Errorf("%s: %d/%d pods bound, %d Running", ph.Name(), ph.Bound, ph.Pods, ph.Running)
		}
		if got := ph.Kubelet["PATCH pods/status"]; got != int64(ph.Pods) {
			t.Errorf("%s: %d status patches, want %d", ph.Name(), got, ph.Pods)
		}
	}
	return r
}
