// Package perf measures hami-scheduler's end-to-end throughput on the
// in-process control plane (test/cluster) with simulated GPU nodes and
// their device plugin and kubelet (test/gpunode): how fast a backlog of
// fractional GPU pods is placed by the hami-scheduler profile, against an
// equal backlog of plain whole-card pods placed by kube-scheduler's default
// profile in the same run.
package perf

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	hamiv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/internal/allocation"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/internal/simnode"
	"github.com/hami-scheduler/hami-scheduler/scheduler/profile"
)

// Options size a run.
type Options struct {
	// Nodes is a gpunode spec, e.g. "500 nodes x 8 cards of NVIDIA A100 40 GiB, split 10".
	Nodes string
	// Pods is the number of pods per profile.
	Pods int
	// NodePolicy is HAMi's node policy (binpack or spread); empty: the
	// plugin's default.
	NodePolicy devices.NodePolicy
	// Seed makes the mix of requests repeatable.
	Seed uint64
	// Log receives the control plane's logs; nil discards them.
	Log io.Writer
	// Progress, if set, receives a line per phase as the run goes.
	Progress io.Writer
	// Timeout bounds each phase (default 20 minutes); pods not bound by
	// then are reported as such.
	Timeout time.Duration
}

// Phase is the outcome of placing one backlog.
type Phase struct {
	// Profile is the scheduler profile that placed the pods.
	Profile string
	Pods    int
	// Bound is how many were bound before the deadline.
	Bound int
	// Elapsed runs from the scheduler's start (caches synced, the backlog
	// already created) to the last pod bound.
	Elapsed time.Duration
	// AttemptP50 and AttemptP99 are quantiles of the scheduler's own
	// scheduling_attempt_duration_seconds (result=scheduled) histogram;
	// an attempt spans the scheduling cycle and the binding cycle. The
	// histogram's last finite bound is 16.384s: a quantile beyond it is
	// reported as that bound, flagged by P50Beyond or P99Beyond.
	AttemptP50, AttemptP99 time.Duration
	// P50Beyond and P99Beyond mark quantiles beyond the last bound.
	P50Beyond, P99Beyond bool
	// Scheduled, Unschedulable and Errors count attempts by result.
	Scheduled, Unschedulable, Errors float64
	// Scheduler and Agent are the API calls made by the scheduler and by
	// the simulated device plugin and kubelet during the phase.
	Scheduler, Agent callDelta
}

// PodsPerSecond is the phase's throughput.
func (p Phase) PodsPerSecond() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.Bound) / p.Elapsed.Seconds()
}

// Result is a whole run.
type Result struct {
	Options  Options
	Baseline Phase
	HAMi     Phase
	// Overcommitted lists cards holding more than they have, according to
	// the pods' annotations after the run; empty when all is well.
	Overcommitted []string
}

// Ratio is HAMi's throughput relative to the baseline's.
func (r *Result) Ratio() float64 {
	if b := r.Baseline.PodsPerSecond(); b > 0 {
		return r.HAMi.PodsPerSecond() / b
	}
	return 0
}

// Run starts a control plane, creates the nodes, then places the baseline
// backlog and the HAMi backlog one after the other, each by a freshly
// started scheduler.
func Run(ctx context.Context, opts Options) (*Result, error) {
	specs, err := simnode.ParseSpecs(opts.Nodes)
	if err != nil {
		return nil, err
	}
	if opts.Pods <= 0 {
		return nil, fmt.Errorf("pods %d: want at least 1", opts.Pods)
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	cp, err := localcluster.Start(localcluster.Options{Log: opts.Log})
	if err != nil {
		return nil, err
	}
	defer cp.Stop()

	agentCalls := newAPICounter()
	agent, err := simnode.NewAgent(cp.Config, simnode.Options{
		Workers: 32, Fast: true, DevicePluginWrap: agentCalls.Wrap, KubeletWrap: agentCalls.Wrap,
	})
	if err != nil {
		return nil, err
	}
	if err := agent.Start(ctx); err != nil {
		return nil, err
	}
	defer agent.Stop()

	var nodes []*corev1.Node
	for _, s := range specs {
		nodes = append(nodes, s.Build("bench", len(nodes))...)
	}
	fmt.Fprintf(progress, "creating %d nodes\n", len(nodes))
	if err := simnode.Create(ctx, cp.Client, nodes); err != nil {
		return nil, err
	}

	if opts.Timeout <= 0 {
		opts.Timeout = 20 * time.Minute
	}
	r := &Result{Options: opts}
	var args *hamiv1.HAMiArgs
	if opts.NodePolicy != "" {
		args = &hamiv1.HAMiArgs{NodeSchedulerPolicy: ptr.To(string(opts.NodePolicy))}
	}
	rng := rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15))
	r.Baseline, err = runPhase(ctx, cp, agentCalls, args, opts.Timeout, "baseline", profile.DefaultSchedulerName, opts.Pods, func(int) []corev1.Container {
		return []corev1.Container{container(gpuRequest{cards: 1})}
	}, progress)
	if err != nil {
		return nil, err
	}
	r.HAMi, err = runPhase(ctx, cp, agentCalls, args, opts.Timeout, "hami", profile.SchedulerName, opts.Pods, func(int) []corev1.Container {
		return []corev1.Container{container(mixedRequest(rng))}
	}, progress)
	if err != nil {
		return nil, err
	}

	allNodes, err := cp.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	allPods, err := cp.Client.CoreV1().Pods("hami").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	report := allocation.Read(allNodes.Items, allPods.Items)
	r.Overcommitted = append(allocation.Overcommitments(report.Cards), report.PodProblems...)
	if s := agent.Stats(); s.Mismatched > 0 {
		r.Overcommitted = append(r.Overcommitted, fmt.Sprintf("device plugin found the wrong pod %d times", s.Mismatched))
	}
	return r, nil
}

// runPhase creates the backlog in its own namespace while no scheduler
// runs, starts a scheduler and measures until every pod is bound.
func runPhase(ctx context.Context, cp *localcluster.ControlPlane, agentCalls *apiCounter, args *hamiv1.HAMiArgs, timeout time.Duration,
	namespace, schedulerName string, pods int, containers func(int) []corev1.Container, progress io.Writer) (Phase, error) {
	ph := Phase{Profile: schedulerName, Pods: pods}
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return ph, err
	}
	fmt.Fprintf(progress, "%s: creating %d pods for %s\n", namespace, pods, schedulerName)
	if err := createPods(ctx, cp.Client, namespace, schedulerName, pods, containers); err != nil {
		return ph, err
	}

	// Count bindings as they happen.
	var bound atomic.Int64
	allBound := make(chan struct{})
	seen := sync.Map{}
	factory := informers.NewSharedInformerFactoryWithOptions(cp.Client, 0, informers.WithNamespace(namespace))
	onPod := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" {
			return
		}
		if _, dup := seen.LoadOrStore(p.UID, true); !dup && bound.Add(1) == int64(pods) {
			close(allBound)
		}
	}
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onPod, UpdateFunc: func(_, obj any) { onPod(obj) },
	}); err != nil {
		return ph, err
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer func() { stopWatch(); factory.Shutdown() }()
	factory.Start(watchCtx.Done())
	factory.WaitForCacheSync(watchCtx.Done())

	schedCalls := newAPICounter()
	scheduledBefore, err := attempts(schedulerName, "scheduled")
	if err != nil {
		return ph, err
	}
	unschedulableBefore, _ := attempts(schedulerName, "unschedulable")
	errorsBefore, _ := attempts(schedulerName, "error")
	agentBefore := agentCalls.snapshot()

	sched, err := localcluster.StartScheduler(ctx, cp.Config, localcluster.SchedulerOptions{
		Args:          args,
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper { return schedCalls.Wrap(rt) },
	})
	if err != nil {
		return ph, err
	}
	fmt.Fprintf(progress, "%s: scheduler started\n", namespace)
	start := time.Now()
	select {
	case <-allBound:
	case <-time.After(timeout):
	case <-ctx.Done():
	}
	ph.Elapsed = time.Since(start)
	ph.Bound = int(bound.Load())
	// Let the last events and device-plugin calls of the phase land
	// before the counters are read.
	time.Sleep(2 * time.Second)
	sched.Stop()
	fmt.Fprintf(progress, "%s: %d/%d pods bound in %s\n", namespace, ph.Bound, pods, ph.Elapsed.Round(time.Millisecond))

	ph.Scheduler = delta(nil, schedCalls.snapshot())
	ph.Agent = delta(agentBefore, agentCalls.snapshot())
	scheduled, err := attempts(schedulerName, "scheduled")
	if err != nil {
		return ph, err
	}
	h := scheduled.since(scheduledBefore)
	ph.AttemptP50, ph.P50Beyond = seconds(h.quantile(0.50), h)
	ph.AttemptP99, ph.P99Beyond = seconds(h.quantile(0.99), h)
	ph.Scheduled = h.count()
	unschedulable, _ := attempts(schedulerName, "unschedulable")
	ph.Unschedulable = unschedulable.since(unschedulableBefore).count()
	errs, _ := attempts(schedulerName, "error")
	ph.Errors = errs.since(errorsBefore).count()
	return ph, nil
}

// seconds converts a quantile; beyond reports one past h's last finite
// bound, which is then returned.
func seconds(s float64, h histogram) (d time.Duration, beyond bool) {
	switch {
	case math.IsNaN(s):
		return 0, false
	case math.IsInf(s, 1):
		last := 0.0
		if n := len(h.bounds); n >= 2 {
			last = h.bounds[n-2]
		}
		return time.Duration(last * float64(time.Second)), true
	}
	return time.Duration(s * float64(time.Second)), false
}

func formatQuantile(d time.Duration, beyond bool) string {
	s := d.Round(100 * time.Microsecond).String()
	if beyond {
		return "> " + s
	}
	return s
}

// createPods creates the backlog with a few parallel clients.
func createPods(ctx context.Context, client kubernetes.Interface, namespace, schedulerName string, n int, containers func(int) []corev1.Container) error {
	const parallel = 16
	var (
		wg    sync.WaitGroup
		next  = make(chan *corev1.Pod)
		mu    sync.Mutex
		first error
	)
	for range parallel {
		wg.Go(func() {
			for p := range next {
				if _, err := client.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("create pod %s: %w", p.Name, err)
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "p-" + strconv.Itoa(i)},
			Spec:       corev1.PodSpec{SchedulerName: schedulerName, Containers: containers(i)},
		}
	}
	close(next)
	wg.Wait()
	return first
}

// gpuRequest is one container's device limits.
type gpuRequest struct {
	cards, memory, percent, cores int64
}

func container(g gpuRequest) corev1.Container {
	limits := corev1.ResourceList{nvidia.DefaultCountName: *resource.NewQuantity(g.cards, resource.DecimalSI)}
	for name, v := range map[corev1.ResourceName]int64{
		nvidia.DefaultMemoryName: g.memory, nvidia.DefaultMemoryPercentageName: g.percent, nvidia.DefaultCoresName: g.cores,
	} {
		if v > 0 {
			limits[name] = *resource.NewQuantity(v, resource.DecimalSI)
		}
	}
	return corev1.Container{Name: "main", Image: "cuda:sim", Resources: corev1.ResourceRequirements{Limits: limits}}
}

// mixedRequest draws a fractional request: mostly a slice of one card's
// memory and cores, some percentages, some two-card and whole-card ones.
func mixedRequest(rng *rand.Rand) gpuRequest {
	switch x := rng.IntN(100); {
	case x < 40:
		return gpuRequest{cards: 1, memory: []int64{1024, 2048, 4096, 8192}[rng.IntN(4)], cores: []int64{0, 10, 20, 30}[rng.IntN(4)]}
	case x < 65:
		return gpuRequest{cards: 1, percent: []int64{10, 25, 50}[rng.IntN(3)]}
	case x < 80:
		return gpuRequest{cards: 2, memory: 4096, cores: 20}
	case x < 90:
		return gpuRequest{cards: 1, cores: 100}
	default:
		return gpuRequest{cards: 1, memory: 16384, cores: 50}
	}
}

// Print writes the run as a table.
func (r *Result) Print(w io.Writer) {
	fmt.Fprintf(w, "End-to-end throughput: %s; %d pods per profile\n", r.Options.Nodes, r.Options.Pods)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	b, h := r.Baseline, r.HAMi
	row := func(name string, f func(Phase) string) { fmt.Fprintf(tw, "%s\t%s\t%s\n", name, f(b), f(h)) }
	row("", func(p Phase) string {
		if p.Profile == profile.SchedulerName {
			return "hami (" + p.Profile + ")"
		}
		return "baseline (" + p.Profile + ")"
	})
	row("pods bound", func(p Phase) string { return fmt.Sprintf("%d/%d", p.Bound, p.Pods) })
	row("time to bind all", func(p Phase) string { return p.Elapsed.Round(10 * time.Millisecond).String() })
	row("pods/s", func(p Phase) string { return strconv.FormatFloat(p.PodsPerSecond(), 'f', 1, 64) })
	row("attempt p50 / p99", func(p Phase) string {
		return formatQuantile(p.AttemptP50, p.P50Beyond) + " / " + formatQuantile(p.AttemptP99, p.P99Beyond)
	})
	row("attempts ok / unschedulable / error", func(p Phase) string {
		return fmt.Sprintf("%.0f / %.0f / %.0f", p.Scheduled, p.Unschedulable, p.Errors)
	})
	row("scheduler API writes/pod", func(p Phase) string { return ratio(float64(p.Scheduler.total(true)), float64(p.Bound)) })
	row("scheduler API reads/pod", func(p Phase) string { return ratio(float64(p.Scheduler.total(false)), float64(p.Bound)) })
	row("device plugin + kubelet writes/pod", func(p Phase) string { return ratio(float64(p.Agent.total(true)), float64(p.Bound)) })
	_ = tw.Flush()
	fmt.Fprintf(w, "ratio hami/baseline pods/s: %.2f\n", r.Ratio())
	for _, p := range []Phase{b, h} {
		fmt.Fprintf(w, "%s writes/pod: %s\n", p.Profile, p.Scheduler.breakdown(true, p.Bound))
		fmt.Fprintf(w, "%s reads/pod: %s\n", p.Profile, p.Scheduler.breakdown(false, p.Bound))
	}
	if len(r.Overcommitted) > 0 {
		fmt.Fprintf(w, "ACCOUNTING PROBLEMS:\n  %s\n", strings.Join(r.Overcommitted, "\n  "))
	}
}

func ratio(n, d float64) string {
	if d == 0 {
		return "-"
	}
	return strconv.FormatFloat(n/d, 'f', 2, 64)
}
