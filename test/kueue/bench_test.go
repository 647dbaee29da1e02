package kueue

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/hami-scheduler/hami-scheduler/cardfit"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
)

// The benchmark's trace (make bench-kueue).
var (
	benchNodes    = flag.Int("kueue-bench-nodes", 200, "nodes of 8 cards of 40 GiB")
	benchJobs     = flag.Int("kueue-bench-jobs", 500, "jobs in the trace")
	benchRate     = flag.Float64("kueue-bench-rate", 10, "jobs created per second")
	benchRun      = flag.Duration("kueue-bench-run", time.Minute, "how long a job runs once all its pods run (then it is deleted)")
	benchSeed     = flag.Uint64("kueue-bench-seed", 1, "seed of the trace")
	benchLimit    = flag.Duration("kueue-bench-limit", 8*time.Minute, "how long after the last arrival a variant ends, every job run or not")
	benchVariants = flag.String("kueue-bench-variants", "kueue,kueue+card-fit", "variants, in order: kueue (Kueue alone) and kueue+card-fit (with the check)")
	benchMems     = flag.String("kueue-bench-mems", "16000,20000,24000,30000", "the trace's pod memory sizes in MiB, drawn evenly")
	// Residents leave the cards fragmented before the trace arrives: each
	// takes one card alone (60% of its cores) with 20,000 MiB, leaving
	// 20,960 MiB and 40% on every card they hold.
	benchResidents   = flag.Int("kueue-bench-residents", 0, "jobs of 8 pods of 20,000 MiB and 60% cores, one card each, running before the trace arrives")
	benchResidentRun = flag.Duration("kueue-bench-resident-run", 3*time.Minute, "how long the residents run once the trace starts")
)

// Residents' pods: one per card (their cores keep a second off it).
const (
	residentPods   = 8
	residentMemory = 20000
	residentCores  = 60
)

// traceJob is one job of the trace: pods asking one card of memory MiB.
type traceJob struct {
	name   string
	at     time.Duration
	pods   int32
	memory int64
	cores  int64
}

// trace is the same mixed fractional jobs for every variant: 1 to 8 pods,
// each asking one card of one of mems (by default 16,000 to 30,000 MiB:
// two of the smaller share a 40 GiB card, the larger take one alone), a
// third with 30% of its cores.
func trace(mems []int64) []traceJob {
	r := rand.New(rand.NewPCG(*benchSeed, 0))
	out := make([]traceJob, *benchJobs)
	for i := range out {
		out[i] = traceJob{
			name:   fmt.Sprintf("j%04d", i),
			at:     time.Duration(float64(i) / *benchRate * float64(time.Second)),
			pods:   int32(1 + r.IntN(8)),
			memory: mems[r.IntN(len(mems))],
		}
		if r.IntN(3) == 0 {
			out[i].cores = 30
		}
	}
	return out
}

// traceMems reads -kueue-bench-mems.
func traceMems() ([]int64, error) {
	var mems []int64
	for _, m := range strings.Split(*benchMems, ",") {
		v, err := strconv.ParseInt(strings.TrimSpace(m), 10, 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("-kueue-bench-mems: %q is not a memory in MiB", m)
		}
		mems = append(mems, v)
	}
	return mems, nil
}

// jobTimes is what the benchmark saw of one job.
type jobTimes struct {
	created, admitted, placed, running time.Time
	pods                               int32
	// run is how long the job runs once all its pods run; resident jobs
	// are not counted in the figures.
	run      time.Duration
	resident bool
	// sentBack: the check answered the job's workload Retry at least once.
	sentBack bool
}

// BenchmarkKueueAdmission runs the trace against Kueue alone and against
// Kueue with the card-fit check, each on nodes of its own, and reports,
// per variant: the jobs admitted whose pods were not all placed within a
// minute of admission, the quota (card shares) x seconds admitted jobs
// held before all their pods were placed, and the time from creation to
// all pods running. Jobs run for -kueue-bench-run once all their pods
// run, then are deleted.
func BenchmarkKueueAdmission(b *testing.B) {
	if skipped != "" {
		b.Skip(skipped)
	}
	// The check with its shipped defaults (the tests' back-off is shorter).
	sched.Stop()
	var err error
	if sched, err = localcluster.StartScheduler(context.Background(), controlPlane.Config, localcluster.SchedulerOptions{CardFit: &cardfit.Options{}}); err != nil {
		b.Fatal(err)
	}
	mems, err := traceMems()
	if err != nil {
		b.Fatal(err)
	}
	var rows []string
	for _, variant := range strings.Split(*benchVariants, ",") {
		rows = append(rows, runVariant(b, variant, trace(mems)))
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("\n%d nodes x 8 cards of 40 GiB, %d jobs at %.1f/s of pods of %s MiB, each running %s once all its pods run (seed %d)",
		*benchNodes, *benchJobs, *benchRate, *benchMems, *benchRun, *benchSeed)
	if *benchResidents > 0 {
		fmt.Printf(", after %d resident jobs of %d pods of %d MiB and %d%% cores running %s from the trace's start", *benchResidents, residentPods, residentMemory, residentCores, *benchResidentRun)
	}
	fmt.Printf("; load average %s\n", strings.TrimSpace(string(load)))
	fmt.Println("| variant | admitted, not placed within 1 min | card-share-seconds held unplaced | creation to all Running: median | p99 | max | never Running | sent back by the check |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Println(r)
	}
}

func runVariant(b *testing.B, variant string, jobs []traceJob) string {
	b.Helper()
	ns := "bench-" + strings.ReplaceAll(variant, "+", "-")
	e := newEnv(b, ns)
	var checks []string
	switch variant {
	case "kueue":
	case "kueue+card-fit":
		checks = []string{checkName}
	default:
		b.Fatalf("unknown variant %q", variant)
	}
	e.addNodes(fmt.Sprintf("%d nodes x 8 cards of NVIDIA A100 40 GiB", *benchNodes))
	e.queue(*benchNodes*8, checks...)
	times := map[string]*jobTimes{}
	var mu sync.Mutex
	get := func(job string) *jobTimes {
		if times[job] == nil {
			times[job] = &jobTimes{}
		}
		return times[job]
	}
	stop := make(chan struct{})
	defer close(stop)
	watchJobs(e, stop, func(job string, admitted, sentBack bool, placed, running int32, at time.Time) {
		mu.Lock()
		defer mu.Unlock()
		jt := get(job)
		jt.sentBack = jt.sentBack || sentBack
		if admitted && jt.admitted.IsZero() {
			jt.admitted = at
		}
		if jt.pods > 0 && placed >= jt.pods && jt.placed.IsZero() {
			jt.placed = at
		}
		if jt.pods > 0 && running >= jt.pods && jt.running.IsZero() {
			jt.running = at
		}
	})
	total := len(jobs) + runResidents(b, e, &mu, get)
	start := time.Now()
	deletions := make(chan string, total)
	var wg sync.WaitGroup
	wg.Go(func() {
		for _, j := range jobs {
			time.Sleep(time.Until(start.Add(j.at)))
			mu.Lock()
			jt := get(j.name)
			jt.created, jt.pods, jt.run = time.Now(), j.pods, *benchRun
			mu.Unlock()
			if err := benchJob(e, j); err != nil {
				b.Error(err)
			}
		}
	})
	// Delete each job -kueue-bench-run after all its pods run; stop when
	// every job ran, or -kueue-bench-limit after the last arrival.
	deadline := start.Add(jobs[len(jobs)-1].at + *benchLimit)
	done := map[string]bool{}
	for len(done) < total && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		mu.Lock()
		for name, jt := range times {
			since := jt.running
			if jt.resident {
				since = start
			}
			if !done[name] && !jt.running.IsZero() && time.Since(since) >= jt.run {
				done[name] = true
				deletions <- name
			}
		}
		mu.Unlock()
		for len(deletions) > 0 {
			name := <-deletions
			_ = controlPlane.Client.BatchV1().Jobs(ns).Delete(e.ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
		}
	}
	wg.Wait()
	end := time.Now()
	mu.Lock()
	row := summarize(variant, times, end)
	mu.Unlock()
	// The jobs left go, and their workloads with them, so that the next
	// variant has Kueue and the machine to itself.
	_ = controlPlane.Client.BatchV1().Jobs(ns).DeleteCollection(e.ctx, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}, metav1.ListOptions{})
	_ = wait.PollUntilContextTimeout(e.ctx, time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		wls, err := e.dyn.Resource(kueueGVR("workloads")).Namespace(ns).List(ctx, metav1.ListOptions{})
		pods, perr := controlPlane.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && perr == nil && len(wls.Items) == 0 && len(pods.Items) == 0, nil
	})
	return row
}

// summarize renders one variant's row.
func summarize(variant string, times map[string]*jobTimes, end time.Time) string {
	var late, never, sentBack int
	var held float64
	var toRunning []time.Duration
	for _, jt := range times {
		if jt.resident {
			continue
		}
		if jt.sentBack {
			sentBack++
		}
		if !jt.admitted.IsZero() {
			placed := jt.placed
			if placed.IsZero() {
				placed = end
			}
			if placed.Sub(jt.admitted) > time.Minute {
				late++
			}
			held += placed.Sub(jt.admitted).Seconds() * float64(jt.pods)
		}
		if jt.running.IsZero() {
			never++
			continue
		}
		toRunning = append(toRunning, jt.running.Sub(jt.created))
	}
	slices.Sort(toRunning)
	pct := func(p float64) string {
		if len(toRunning) == 0 {
			return "-"
		}
		return toRunning[min(len(toRunning)-1, int(p*float64(len(toRunning))))].Round(100 * time.Millisecond).String()
	}
	return fmt.Sprintf("| %s | %d | %.0f | %s | %s | %s | %d | %d |", variant, late, held, pct(0.5), pct(0.99), pct(1), never, sentBack)
}

// runResidents creates the resident jobs and waits until all their pods
// run, so that the trace meets fragmented cards; it returns how many.
func runResidents(b *testing.B, e *env, mu *sync.Mutex, get func(string) *jobTimes) int {
	b.Helper()
	n := *benchResidents
	for i := range n {
		j := traceJob{name: fmt.Sprintf("r%03d", i), pods: residentPods, memory: residentMemory, cores: residentCores}
		mu.Lock()
		jt := get(j.name)
		jt.created, jt.pods, jt.run, jt.resident = time.Now(), j.pods, *benchResidentRun, true
		mu.Unlock()
		if err := benchJob(e, j); err != nil {
			b.Fatal(err)
		}
	}
	err := wait.PollUntilContextTimeout(e.ctx, time.Second, 10*time.Minute, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		for i := range n {
			if get(fmt.Sprintf("r%03d", i)).running.IsZero() {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		b.Fatalf("%d resident jobs did not all run: %v", n, err)
	}
	return n
}

// benchJob creates one job of the trace.
func benchJob(e *env, j traceJob) error {
	c := card{count: 1, memory: j.memory, cores: j.cores}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: j.name, Namespace: e.ns, Labels: map[string]string{queueLabel: "gpus"}},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To(j.pods), Completions: ptr.To(j.pods),
			Template: corev1.PodTemplateSpec{Spec: e.podSpec(c)},
		},
	}
	_, err := controlPlane.Client.BatchV1().Jobs(e.ns).Create(e.ctx, job, metav1.CreateOptions{})
	return err
}

// watchJobs reports, per job of the namespace, whether its workload is
// admitted and how many of its pods are placed and running, at every
// change.
func watchJobs(e *env, stop <-chan struct{}, report func(job string, admitted, sentBack bool, placed, running int32, at time.Time)) {
	pods := informers.NewSharedInformerFactoryWithOptions(controlPlane.Client, 0, informers.WithNamespace(e.ns))
	podInformer := pods.Core().V1().Pods().Informer()
	count := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		job := p.Labels["job-name"]
		if job == "" {
			return
		}
		var placed, running int32
		for _, o := range podInformer.GetStore().List() {
			q := o.(*corev1.Pod)
			if q.Labels["job-name"] != job || q.DeletionTimestamp != nil {
				continue
			}
			if q.Spec.NodeName != "" {
				placed++
			}
			if q.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		report(job, false, false, placed, running, time.Now())
	}
	_, _ = podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: count, UpdateFunc: func(_, o any) { count(o) }})
	wls := dynamicinformer.NewFilteredDynamicSharedInformerFactory(e.dyn, 0, e.ns, nil)
	wlInformer := wls.ForResource(kueueGVR("workloads")).Informer()
	onWL := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		s := stateOf(u)
		if s.owner != "" && (s.admitted || s.sentBack()) {
			report(s.owner, s.admitted, s.sentBack(), 0, 0, time.Now())
		}
	}
	_, _ = wlInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onWL, UpdateFunc: func(_, o any) { onWL(o) }})
	pods.Start(stop)
	wls.Start(stop)
	pods.WaitForCacheSync(stop)
	wls.WaitForCacheSync(stop)
}
