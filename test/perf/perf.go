// Package perf measures hami-scheduler end to end on the in-process control
// plane (internal/localcluster) with simulated GPU nodes whose device
// plugin and kubelet are played by internal/localcluster/simnode: how fast
// pods get to Running, how long each takes, what the scheduler and the
// nodes ask of the API server per pod, and how tightly the pods are packed.
// HAMi's fractional pods are placed with each node/card policy, once as a
// backlog and once arriving at a steady rate; a backlog of plain whole-card
// pods placed by kube-scheduler's default profile in the same run is the
// baseline.
package perf

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	hamiv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
	"github.com/hami-scheduler/hami-scheduler/apis/scheduling/v1alpha1"
	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/internal/allocation"
	"github.com/hami-scheduler/hami-scheduler/internal/clustervendors"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
	"github.com/hami-scheduler/hami-scheduler/plugins"
	devicecache "github.com/hami-scheduler/hami-scheduler/plugins/cache"
	"github.com/hami-scheduler/hami-scheduler/scheduler/profile"
)

// Arrival is how a phase's pods come.
type Arrival string

const (
	// Backlog pods are all created before the scheduler starts.
	Backlog Arrival = "backlog"
	// Steady pods are created one by one at one of Options.Rates while the
	// scheduler runs.
	Steady Arrival = "steady"
)

// Options size a run.
type Options struct {
	// Nodes is a simnode spec, e.g. "500 nodes x 8 cards of NVIDIA A100 40 GiB, split 10".
	Nodes string
	// Pods is the number of pods per phase.
	Pods int
	// Settings are the HAMi settings to run; each policy sets both
	// nodeSchedulerPolicy and gpuSchedulerPolicy. Empty: binpack, spread.
	Settings []Setting
	// Arrivals are the HAMi arrivals to run per policy. Empty: backlog,
	// steady.
	Arrivals []Arrival
	// Rates are the steady arrival rates in pods/s, each a phase of its
	// own per setting; empty or 0: half the pods/s to Running of the same
	// policy's backlog in this run (10 if none ran).
	Rates []float64
	// NodeSide configures the simulated device plugins and kubelets; the
	// zero value is the faithful node side. Its transport wrappers are
	// the benchmark's.
	NodeSide simnode.Options
	// Repeat runs each HAMi phase this many times (0 or 1: once), one
	// after the other, each with a fresh scheduler: the same pods, for
	// the median and the slowest of a setting (PrintRepeats, Rules).
	Repeat int
	// Seed makes the mix of requests repeatable.
	Seed uint64
	// Log receives the control plane's logs; nil discards them.
	Log io.Writer
	// Progress, if set, receives a line per phase as the run goes.
	Progress io.Writer
	// Timeout bounds each phase (default 20 minutes); pods not Running by
	// then are reported as such.
	Timeout time.Duration
	// SchedulerBinary is the hami-scheduler build each phase runs as a
	// process (phaseScheduler); SchedulerLog, if set, receives its output.
	SchedulerBinary string
	SchedulerLog    io.Writer
	// ProfileDir, if set, receives CPU profiles of each phase, of this
	// process (control plane and nodes) and of the scheduler process, from
	// the scheduler's start to the phase's last pod Running
	// (startCPUProfile).
	ProfileDir string
}

// Phase is the outcome of placing one set of pods.
type Phase struct {
	// Profile is the scheduler profile that placed the pods.
	Profile string
	// Setting is HAMi's node and card policy and queue limit; empty for
	// the baseline.
	Setting Setting
	Arrival Arrival
	// Rate is the steady arrival rate (pods/s). RateInName puts it in
	// the phase's name, when a run has several rates.
	Rate       float64
	RateInName bool
	// Run numbers the phase among the repeats of the same one (from 1;
	// 0 when the phase runs once).
	Run  int
	Pods int
	// Bound, Running and Failed count the pods that got there before the
	// deadline.
	Bound, Running, Failed int
	// Elapsed runs from the phase's start (the scheduler's start for a
	// backlog, the first pod's creation for steady arrivals) to the last
	// pod Running (or failed).
	Elapsed time.Duration
	// RunP50 and RunP99 are quantiles of the pods' time to Running: from
	// the scheduler's start (backlog) or the pod's creation (steady).
	RunP50, RunP99 time.Duration
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
	// Scheduler, DevicePlugin and Kubelet are the API calls made by the
	// scheduler process (by method, from its start: clientCalls), the
	// simulated device plugins and the simulated kubelets (by method and
	// resource, during the phase).
	Scheduler, DevicePlugin, Kubelet callDelta
	// Packing is where the pods went.
	Packing Packing
	// Served is, for steady arrivals, the rate at which pods got to
	// Running while they arrived: the pods that got there between a
	// quarter of the arrival window and the last creation, over that
	// time. A scheduler that keeps up serves the arrival rate; the drain
	// after the last creation, which PodsPerSecond includes, is left out.
	Served float64
	// BindElapsed runs from the phase's start to the last pod bound.
	BindElapsed time.Duration
	// Algorithm is the time the scheduler spent finding nodes
	// (scheduling_algorithm_duration_seconds: PreFilter, Filter, PreScore,
	// Score) during the phase, in all; the scheduling loop runs it one pod
	// at a time. PreBind is the mean duration of the PreBind extension
	// point (HAMi's lock wait and assignment patch).
	Algorithm sumCount
	PreBind   sumCount
	// SchedulerLatency is the mean time of the scheduler's API requests
	// (its client's rest_client_request_duration_seconds, from its start).
	// DevicePluginSpent is the time the device plugins' API calls took in
	// the transport, in all. Both are the API server's latency, not the
	// clients' rate limiters.
	SchedulerLatency, DevicePluginSpent time.Duration
	// HandOverP50 and HandOverP99 are quantiles of the node hand-overs
	// that a pod was waiting for: from the device plugin releasing a
	// node's lock to the kubelet's Allocate of the next pod on the node,
	// counted when that pod's assignment was written before the release
	// (its PreBind was waiting for the lock). The kubelet's admission
	// delay is part of it. HandOvers is how many were counted.
	HandOvers                int
	HandOverP50, HandOverP99 time.Duration
	// HandOverPerPod is a node's time per pod while pods queue on it: the
	// median, over the phase's nodes, of the time from one lock release
	// to the next when the pod served in between was waiting at the first
	// (the whole hand-over: the lock passing, binding, admission and the
	// device plugin's calls). BusiestPerPod is the same on the busiest
	// node alone (HandOverPerPod when it measured fewer than 3).
	HandOverPerPod, BusiestPerPod time.Duration
	// Filter and Score are the mean time per node of each plugin's Filter
	// and Score (scheduler_plugin_execution_duration_seconds, which
	// kube-scheduler samples in one cycle of ten), by plugin.
	Filter, Score map[string]time.Duration
	// PreFilter is the mean time of each plugin's PreFilter per pod
	// (HAMi's chooses the candidate nodes, candidateNodes).
	PreFilter map[string]time.Duration
	// SchedulerHeap is the live heap a scheduler takes on the cluster as
	// the phase left it (schedulerHeap). Cache is what its device cache
	// holds then.
	SchedulerHeap uint64
	Cache         devicecache.Stats
	// SchedulerCPU is the CPU time the scheduler process used from its
	// start to the phase's last pod Running; ClusterCPU the same of the
	// benchmark's own process: the API server, etcd, the simulated nodes
	// and the benchmark's watch, which share the machine with it.
	SchedulerCPU, ClusterCPU time.Duration
	// DRAPods are the pods that ran on DRA nodes; DRAReserved those of
	// them whose every claim was allocated on their node and reserved
	// for them (checkClaims).
	DRAPods, DRAReserved int
}

// PerNode is the sum of the plugins' mean times per node.
func PerNode(byPlugin map[string]time.Duration) time.Duration {
	var total time.Duration
	for _, d := range byPlugin {
		total += d
	}
	return total
}

// AlgorithmPerPod is the mean time of the scheduling algorithm per
// attempt.
func (p Phase) AlgorithmPerPod() time.Duration { return p.Algorithm.mean() }

// Name names the phase in tables.
func (p Phase) Name() string {
	if p.IsBaseline() {
		return "baseline " + string(p.Arrival)
	}
	name := fmt.Sprintf("hami %s %s", p.Arrival, p.Setting)
	if p.RateInName {
		name = fmt.Sprintf("hami %s %g/s %s", p.Arrival, p.Rate, p.Setting)
	}
	if p.Run > 0 {
		name += fmt.Sprintf(" run %d", p.Run)
	}
	return name
}

// IsBaseline reports whether the phase is the baseline: whole-card pods
// placed by kube-scheduler's default profile, no HAMi setting.
func (p Phase) IsBaseline() bool { return p.Setting.Policy == "" }

// PodsPerSecond is the phase's throughput to Running.
func (p Phase) PodsPerSecond() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.Running) / p.Elapsed.Seconds()
}

// Packing counts the cards and nodes the pods of a phase hold, against a
// lower bound of the fewest that could hold them.
type Packing struct {
	// Cards and Nodes are the cards and nodes holding at least one pod.
	Cards, Nodes int
	// MinCards is a lower bound of the cards the pods need: the largest
	// of their total memory, total cores and total sharers each divided
	// by one card's capacity, and the most cards one container asks for.
	// MinNodes is MinCards divided by the cards of a node. Both are
	// bounds, not always achievable (bin packing is hard).
	MinCards, MinNodes int
	// BusiestNode is the most pods on one node. With HAMi's node lock a
	// node takes one pod per device-plugin round, so it bounds a backlog's
	// time from below: BusiestNode rounds of about 1.6 s with HAMi's
	// 5 QPS device plugin client (Phase.HandOverBound).
	BusiestNode int
	// FreeNodes are the cluster's nodes holding no pod of the phase:
	// whole nodes left for what comes next.
	FreeNodes int
	// DRACards are the cards among Cards that DRA nodes publish, counted
	// from the claims' allocations (draCards).
	DRACards int
}

// Result is a whole run.
type Result struct {
	Options Options
	// Nodes is how many nodes the run created; Cards their most cards
	// per node.
	Nodes, Cards int
	// NodeSide describes the simulated nodes' mode.
	NodeSide string
	// Phases are the baseline first, then HAMi's by policy and arrival.
	Phases []Phase
	// Overcommitted lists cards holding more than they have, according to
	// the pods' annotations after each phase, and other accounting
	// problems; empty when all is well.
	Overcommitted []string
}

// Baseline is the baseline phase.
func (r *Result) Baseline() Phase { return r.Phases[0] }

// Find returns HAMi's phase for a policy and arrival.
func (r *Result) Find(setting Setting, arrival Arrival) (Phase, bool) {
	for _, p := range r.Phases[1:] {
		if p.Setting == setting && p.Arrival == arrival {
			return p, true
		}
	}
	return Phase{}, false
}

// Run starts a control plane, creates the nodes, then runs the phases one
// after the other, each with a freshly started scheduler; a phase's pods
// are deleted before the next starts.
func Run(ctx context.Context, opts Options) (*Result, error) {
	specs, err := simnode.ParseSpecs(opts.Nodes)
	if err != nil {
		return nil, err
	}
	if opts.Pods <= 0 {
		return nil, fmt.Errorf("pods %d: want at least 1", opts.Pods)
	}
	if len(opts.Settings) == 0 {
		opts.Settings = []Setting{{Policy: devices.NodeBinpack}, {Policy: devices.NodeSpread}}
	}
	if len(opts.Arrivals) == 0 {
		opts.Arrivals = []Arrival{Backlog, Steady}
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 20 * time.Minute
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
	// The chart's PodGroup CRD, as a cluster has it before hami-scheduler
	// starts: the gang settings (/gN) create PodGroups.
	if err := localcluster.InstallPodGroupCRD(ctx, cp.Config); err != nil {
		return nil, err
	}

	calls := &nodeCalls{devicePlugin: newAPICounter(), kubelet: newAPICounter()}
	nodeSide := opts.NodeSide
	// A DRA driver's calls count with the device plugins': the node side
	// of a card's allocation, whichever kind the node is.
	nodeSide.DevicePluginWrap, nodeSide.KubeletWrap, nodeSide.DRADriverWrap = calls.devicePlugin.Wrap, calls.kubelet.Wrap, calls.devicePlugin.Wrap
	if nodeSide.Workers == 0 {
		nodeSide.Workers = 32
	}
	dra := draRoutes(opts.Settings)
	if dra.nodes && nodeSide.DRAWipingDelay == 0 {
		// Nodes switch kinds between phases only, with no pod on them:
		// the kubelet's wait before it wipes a gone driver's slices
		// would only stretch the gap.
		nodeSide.DRAWipingDelay = -1
	}
	agent, err := simnode.NewAgent(cp.Config, nodeSide)
	if err != nil {
		return nil, err
	}
	if err := agent.Start(ctx); err != nil {
		return nil, err
	}
	defer agent.Stop()
	r := &Result{Options: opts, NodeSide: agent.Options().String()}
	fmt.Fprintf(progress, "node side: %s\n", r.NodeSide)

	var nodes []*corev1.Node
	for _, s := range specs {
		nodes = append(nodes, s.Build("bench", len(nodes))...)
		r.Cards = max(r.Cards, s.Cards)
	}
	r.Nodes = len(nodes)
	fmt.Fprintf(progress, "creating %d nodes\n", len(nodes))
	if err := simnode.Create(ctx, cp.Client, nodes); err != nil {
		return nil, err
	}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	if dra.nodes {
		stop, err := dra.start(ctx, cp, specs)
		if err != nil {
			return nil, err
		}
		defer stop()
	}

	run := func(ph Phase, args *hamiv1.HAMiArgs, containers func() []corev1.Container) error {
		if dra.nodes {
			fmt.Fprintf(progress, "%s: %d%% of the nodes DRA nodes\n", ph.Name(), ph.Setting.DRAPercent)
			if err := setNodeKinds(ctx, cp.Client, names, ph.Setting.DRAPercent); err != nil {
				return err
			}
		}
		ph, problems, err := runPhase(ctx, cp, agent, calls, dra, args, opts, ph, containers, progress)
		if err != nil {
			return err
		}
		r.Phases = append(r.Phases, ph)
		for _, p := range problems {
			r.Overcommitted = append(r.Overcommitted, ph.Name()+": "+p)
		}
		return nil
	}
	if err := run(Phase{Profile: profile.DefaultSchedulerName, Arrival: Backlog, Pods: opts.Pods}, nil, func() []corev1.Container {
		return []corev1.Container{container(gpuRequest{cards: 1})}
	}); err != nil {
		return nil, err
	}
	for _, setting := range opts.Settings {
		args := setting.args()
		for _, ph := range repeated(hamiPhases(opts, setting), opts.Repeat) {
			if ph.Arrival == Steady && ph.Rate <= 0 {
				ph.Rate = defaultRate(r, setting)
			}
			// Every HAMi phase draws the same mix; with sets (or gangs) of
			// N, each N consecutive pods ask what the first draws.
			rng := rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15))
			var drawn int
			var request gpuRequest
			if err := run(ph, args, func() []corev1.Container {
				if setting.Sets <= 1 || drawn%setting.Sets == 0 {
					request = mixedRequest(rng, dra.percentAsMiB(specs))
				}
				drawn++
				return []corev1.Container{container(request)}
			}); err != nil {
				return nil, err
			}
		}
	}
	if s := agent.Stats(); s.Mismatched > 0 {
		r.Overcommitted = append(r.Overcommitted, fmt.Sprintf("device plugin found the wrong pod %d times", s.Mismatched))
	}
	if s := agent.Stats(); s.DRAViolations > 0 {
		r.Overcommitted = append(r.Overcommitted, fmt.Sprintf("DRA drivers were handed %d claims no driver should serve (simnode.ViolationError)", s.DRAViolations))
	}
	return r, nil
}

// hamiPhases are the phases of a setting, in the order of opts.Arrivals:
// a backlog, and steady arrivals at each of opts.Rates (0: defaultRate,
// once the backlog ran).
func hamiPhases(opts Options, setting Setting) []Phase {
	rates := opts.Rates
	if len(rates) == 0 {
		rates = []float64{0}
	}
	var phases []Phase
	for _, arrival := range opts.Arrivals {
		ph := Phase{Profile: profile.SchedulerName, Setting: setting, Arrival: arrival, Pods: opts.Pods}
		if setting.HAMiDRA {
			// HAMi-DRA has no scheduler of its own: kube-scheduler's
			// default profile, here in the same process, allocates its
			// webhook's claims.
			ph.Profile = profile.DefaultSchedulerName
		}
		if arrival != Steady {
			phases = append(phases, ph)
			continue
		}
		for _, rate := range rates {
			ph.Rate, ph.RateInName = rate, len(rates) > 1
			phases = append(phases, ph)
		}
	}
	return phases
}

// repeated runs each phase n times in a row, numbered (once, unnumbered,
// when n is below 2).
func repeated(phases []Phase, n int) []Phase {
	if n < 2 {
		return phases
	}
	var out []Phase
	for _, ph := range phases {
		for run := 1; run <= n; run++ {
			ph.Run = run
			out = append(out, ph)
		}
	}
	return out
}

// defaultRate is half the pods/s to Running of the setting's backlog in
// r, 10 if none ran.
func defaultRate(r *Result, setting Setting) float64 {
	if b, ok := r.Find(setting, Backlog); ok && b.PodsPerSecond() > 0 {
		return math.Round(b.PodsPerSecond()*5) / 10
	}
	return 10
}

// nodeCalls count the simulated nodes' API calls.
type nodeCalls struct {
	devicePlugin, kubelet *apiCounter
}

// podTimes follows a phase's pods through a watch.
type podTimes struct {
	mu                     sync.Mutex
	bound, running, failed map[string]time.Time
	// handed is when the pod's assignment (bind-phase allocating) was
	// first seen: HAMi's PreBind writes it before it waits for the lock.
	handed map[string]time.Time
	pods   int
	done   chan struct{}
}

func (t *podTimes) observe(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, seen := t.handed[p.Name]; !seen && p.Annotations[devices.BindPhase] == devices.BindPhaseAllocating {
		t.handed[p.Name] = now
	}
	if p.Spec.NodeName == "" {
		return
	}
	if _, seen := t.bound[p.Name]; !seen {
		t.bound[p.Name] = now
	}
	target := map[corev1.PodPhase]map[string]time.Time{corev1.PodRunning: t.running, corev1.PodFailed: t.failed}[p.Status.Phase]
	if target == nil {
		return
	}
	if _, seen := target[p.Name]; seen {
		return
	}
	target[p.Name] = now
	if len(t.running)+len(t.failed) == t.pods {
		close(t.done)
	}
}

// runPhase creates the phase's pods in its own namespace (before the
// scheduler starts for a backlog, at the phase's rate after it for steady
// arrivals), measures until every pod is Running or failed, then deletes
// them. problems are accounting problems found before the deletion.
func runPhase(ctx context.Context, cp *localcluster.ControlPlane, agent *simnode.Agent, calls *nodeCalls, dra *draSetup, args *hamiv1.HAMiArgs, opts Options,
	ph Phase, containers func() []corev1.Container, progress io.Writer) (_ Phase, problems []string, _ error) {
	namespace := phaseNamespace(ph)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if ph.Setting.HAMiDRA {
		ns.Labels = hamiDRANamespaceLabel
	}
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return ph, nil, err
	}
	if ph.Setting.HAMiDRA {
		if err := dra.webhook.WaitAdmitting(ctx, namespace, time.Minute); err != nil {
			return ph, nil, err
		}
	}
	// Draw the requests up front, in pod order.
	specs := make([]corev1.PodSpec, ph.Pods)
	for i := range specs {
		specs[i] = corev1.PodSpec{SchedulerName: ph.Profile, Containers: containers()}
	}
	newPod := func(i int) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "p-" + strconv.Itoa(i)}, Spec: specs[i]}
		if ph.Setting.Gang {
			p.Labels = map[string]string{v1alpha1.PodGroupLabel: gangName(i, ph.Setting.Sets)}
		}
		return p
	}
	if ph.Setting.Gang {
		if err := createPodGroups(ctx, cp.Config, namespace, ph.Pods, ph.Setting.Sets); err != nil {
			return ph, nil, err
		}
	}
	if ph.Arrival == Backlog {
		fmt.Fprintf(progress, "%s: creating %d pods\n", ph.Name(), ph.Pods)
		if err := createPods(ctx, cp.Client, ph.Pods, newPod); err != nil {
			return ph, nil, err
		}
	}

	times := &podTimes{bound: map[string]time.Time{}, running: map[string]time.Time{}, failed: map[string]time.Time{},
		handed: map[string]time.Time{}, pods: ph.Pods, done: make(chan struct{})}
	agent.TakeHandOvers()
	factory := informers.NewSharedInformerFactoryWithOptions(cp.Client, 0, informers.WithNamespace(namespace))
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: times.observe, UpdateFunc: func(_, obj any) { times.observe(obj) },
	}); err != nil {
		return ph, nil, err
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer func() { stopWatch(); factory.Shutdown() }()
	factory.Start(watchCtx.Done())
	factory.WaitForCacheSync(watchCtx.Done())

	dpBefore, kubeletBefore := calls.devicePlugin.snapshot(), calls.kubelet.snapshot()
	dpSpentBefore := calls.devicePlugin.spentSoFar()
	sched, err := startPhaseScheduler(ctx, cp, opts.SchedulerBinary, args, opts.SchedulerLog)
	if err != nil {
		return ph, nil, err
	}
	defer sched.stop(ctx)
	schedCPUBefore, err := sched.cpuTime()
	if err != nil {
		return ph, nil, err
	}
	clusterCPUBefore := ownCPU()
	stopProfile, err := startCPUProfile(opts.ProfileDir, opts.Nodes, ph, sched)
	if err != nil {
		return ph, nil, err
	}
	leading, err := sched.leadingSince(ctx)
	if err != nil {
		stopProfile()
		return ph, nil, err
	}
	fmt.Fprintf(progress, "%s: scheduler started\n", ph.Name())
	// A backlog's pods wait from the moment the scheduler leads; steady
	// arrivals start now.
	start := time.Now()
	if ph.Arrival == Backlog {
		start = leading
	}
	created := make([]time.Time, ph.Pods)
	deadline := time.After(opts.Timeout)
	createErr := make(chan error, 1)
	if ph.Arrival == Steady {
		fmt.Fprintf(progress, "%s: creating %d pods at %g/s\n", ph.Name(), ph.Pods, ph.Rate)
		createErr <- createSteadily(ctx, cp.Client, ph.Pods, ph.Rate, newPod, created)
	} else {
		for i := range created {
			created[i] = start
		}
		createErr <- nil
	}
	if err := <-createErr; err != nil {
		stopProfile()
		return ph, nil, err
	}
	select {
	case <-times.done:
	case <-deadline:
	case <-ctx.Done():
	}
	stopProfile()
	schedCPU, err := sched.cpuTime()
	if err != nil {
		return ph, nil, err
	}
	ph.SchedulerCPU, ph.ClusterCPU = schedCPU-schedCPUBefore, ownCPU()-clusterCPUBefore
	times.mu.Lock()
	ph.Bound, ph.Running, ph.Failed = len(times.bound), len(times.running), len(times.failed)
	var last time.Time
	var toRunning []time.Duration
	runningAt := make([]time.Time, 0, len(times.running))
	for name, at := range times.running {
		runningAt = append(runningAt, at)
		i, _ := strconv.Atoi(strings.TrimPrefix(name, "p-"))
		toRunning = append(toRunning, at.Sub(created[i]))
		if at.After(last) {
			last = at
		}
	}
	for _, at := range times.failed {
		if at.After(last) {
			last = at
		}
	}
	var lastBound time.Time
	for _, at := range times.bound {
		if at.After(lastBound) {
			lastBound = at
		}
	}
	handed := maps.Clone(times.handed)
	times.mu.Unlock()
	if !lastBound.IsZero() {
		ph.BindElapsed = lastBound.Sub(created[0])
	}
	if !last.IsZero() {
		ph.Elapsed = last.Sub(created[0])
	}
	ph.RunP50, ph.RunP99 = quantile(toRunning, 0.50), quantile(toRunning, 0.99)
	if ph.Arrival == Steady {
		ph.Served = servedWhileArriving(created, runningAt)
	}
	// Let the last events and node-side calls of the phase land before
	// the counters are read.
	time.Sleep(2 * time.Second)
	metrics, err := sched.metrics(ctx)
	if err != nil {
		return ph, nil, err
	}
	sched.stop(ctx)
	ph.Filter, ph.Score = metrics.pluginMeans("Filter"), metrics.pluginMeans("Score")
	ph.PreFilter = metrics.pluginMeans("PreFilter")
	fmt.Fprintf(progress, "%s: %d/%d pods Running (%d failed) in %s\n", ph.Name(), ph.Running, ph.Pods, ph.Failed, ph.Elapsed.Round(time.Millisecond))

	ph.Scheduler = clientCalls(metrics)
	ph.DevicePlugin = delta(dpBefore, calls.devicePlugin.snapshot())
	ph.Kubelet = delta(kubeletBefore, calls.kubelet.snapshot())
	handOvers := agent.TakeHandOvers()
	gaps := waitedHandOvers(handOvers, namespace, handed)
	ph.HandOvers, ph.HandOverP50, ph.HandOverP99 = len(gaps), quantile(gaps, 0.50), quantile(gaps, 0.99)
	ph.SchedulerLatency, ph.DevicePluginSpent = clientLatency(metrics), calls.devicePlugin.spentSoFar()-dpSpentBefore
	h := metrics.attempts(ph.Profile, "scheduled")
	ph.AttemptP50, ph.P50Beyond = seconds(h.quantile(0.50), h)
	ph.AttemptP99, ph.P99Beyond = seconds(h.quantile(0.99), h)
	ph.Scheduled = h.count()
	ph.Unschedulable = metrics.attempts(ph.Profile, "unschedulable").count()
	ph.Errors = metrics.attempts(ph.Profile, "error").count()
	ph.Algorithm = metrics.histogramTotals(algorithmMetric, nil)
	ph.PreBind = metrics.histogramTotals(extensionPointMetric, map[string]string{"profile": ph.Profile, "extension_point": "PreBind"})

	allNodes, err := cp.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return ph, nil, err
	}
	pods, err := cp.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return ph, nil, err
	}
	// The cluster is NVIDIA's alone: the scheduler's built-in vendors.
	nvidiaOnly, err := clustervendors.FromConfigs(nil)
	if err != nil {
		return ph, nil, err
	}
	report := allocation.Read(nvidiaOnly, allNodes.Items, pods.Items)
	problems = append(allocation.Overcommitments(report.Cards), report.PodProblems...)
	if ph.IsBaseline() {
		ph.Packing = wholeCardPacking(allNodes.Items, pods.Items)
	} else {
		drs, draProblems, err := phaseDRA(ctx, cp.Client, namespace, allNodes.Items, pods.Items, &ph)
		if err != nil {
			return ph, nil, err
		}
		problems = append(problems, draProblems...)
		ph.Packing = fractionalPacking(append(report.Cards, drs...), specs)
		ph.Packing.DRACards = usedCards(drs)
	}
	var busiest string
	busiest, ph.Packing.BusiestNode = busiestNode(pods.Items)
	ph.Packing.FreeNodes = len(allNodes.Items) - ph.Packing.Nodes
	ph.HandOverPerPod, ph.BusiestPerPod = perPodTimes(serviceTimes(handOvers, namespace, handed), busiest)
	if ph.SchedulerHeap, ph.Cache, err = schedulerHeap(ctx, cp, opts.SchedulerBinary, args, opts.SchedulerLog); err != nil {
		return ph, nil, err
	}
	return ph, problems, deletePods(ctx, cp.Client, namespace)
}

// schedulerHeap measures the live heap of a scheduler process on the
// cluster as the phase left it (its pods bound, nothing to schedule): a
// fresh process, once ready, after a garbage collection; its informers'
// copies of the nodes and pods, the device cache, kube-scheduler's cache.
// It also returns what that process's device cache holds.
func schedulerHeap(ctx context.Context, cp *localcluster.ControlPlane, binary string, args *hamiv1.HAMiArgs, log io.Writer) (uint64, devicecache.Stats, error) {
	s, err := startPhaseScheduler(ctx, cp, binary, args, log)
	if err != nil {
		return 0, devicecache.Stats{}, err
	}
	defer s.stop(ctx)
	heap, err := s.liveHeap(ctx)
	if err != nil {
		return 0, devicecache.Stats{}, err
	}
	metrics, err := s.metrics(ctx)
	if err != nil {
		return 0, devicecache.Stats{}, err
	}
	return heap, cacheStats(metrics), nil
}

// servedWhileArriving is the rate of pods getting to Running from a quarter
// of the arrival window (creation times, in pod order) to the last
// creation.
func servedWhileArriving(created, running []time.Time) float64 {
	if len(created) < 2 {
		return 0
	}
	first, last := created[0], created[len(created)-1]
	from := first.Add(last.Sub(first) / 4)
	if !last.After(from) {
		return 0
	}
	n := 0
	for _, at := range running {
		if at.After(from) && !at.After(last) {
			n++
		}
	}
	return float64(n) / last.Sub(from).Seconds()
}

// waitedHandOvers returns the hand-overs of the namespace's pods that the
// pod was waiting for: it was handed over (handed) before the node's lock
// was released.
func waitedHandOvers(all []simnode.HandOver, namespace string, handed map[string]time.Time) []time.Duration {
	var gaps []time.Duration
	for _, h := range all {
		at, ok := handed[h.Name]
		if h.Namespace != namespace || !ok || h.Released.IsZero() || !at.Before(h.Released) {
			continue
		}
		gaps = append(gaps, h.AllocateStarted.Sub(h.Released))
	}
	return gaps
}

// busiestNode is the node most pods are bound to (the first by name on a
// tie), and how many.
func busiestNode(pods []corev1.Pod) (string, int) {
	perNode := map[string]int{}
	for i := range pods {
		if n := pods[i].Spec.NodeName; n != "" {
			perNode[n]++
		}
	}
	busiest, most := "", 0
	for n, count := range perNode {
		if count > most || (count == most && n < busiest) {
			busiest, most = n, count
		}
	}
	return busiest, most
}

// Scheduler metrics read besides the attempts.
const (
	algorithmMetric      = "scheduler_scheduling_algorithm_duration_seconds"
	extensionPointMetric = "scheduler_framework_extension_point_duration_seconds"
)

// quantile is the q-quantile of ds (nearest rank); 0 when empty.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// fractionalPacking reads HAMi's placement from the cards' use: the
// device-plugin cards' from the pods' annotations, the DRA cards' from
// the claims' allocations (draCards). A DRA card has no split count: its
// sharers are not held against the device-plugin cards' split.
func fractionalPacking(cards []allocation.CardUse, specs []corev1.PodSpec) Packing {
	var p Packing
	var memory, cores, sharers int64
	var capMemory, capCores, capSplit int64
	nodes, perNode := map[string]bool{}, map[string]int{}
	for _, c := range cards {
		perNode[c.Node]++
		capMemory, capCores, capSplit = max(capMemory, int64(c.MemoryMiB)), max(capCores, int64(c.Cores)), max(capSplit, int64(c.Split))
		if c.Used.Sharers == 0 {
			continue
		}
		p.Cards++
		nodes[c.Node] = true
		memory, cores = memory+c.Used.MemoryMiB, cores+c.Used.Cores
		if c.Split > 0 {
			sharers += int64(c.Used.Sharers)
		}
	}
	p.Nodes = len(nodes)
	p.MinCards = widestRequest(specs)
	for _, b := range [][2]int64{{memory, capMemory}, {cores, capCores}, {sharers, capSplit}} {
		if b[1] > 0 {
			p.MinCards = max(p.MinCards, int((b[0]+b[1]-1)/b[1]))
		}
	}
	cardsPerNode := 0
	for _, n := range perNode {
		cardsPerNode = max(cardsPerNode, n)
	}
	if cardsPerNode > 0 {
		p.MinNodes = (p.MinCards + cardsPerNode - 1) / cardsPerNode
	}
	return p
}

// wholeCardPacking counts the whole cards (nvidia.com/gpu) the running
// pods hold through the default profile.
func wholeCardPacking(nodes []corev1.Node, pods []corev1.Pod) Packing {
	var p Packing
	used := map[string]bool{}
	for i := range pods {
		if pods[i].Spec.NodeName == "" || pods[i].Status.Phase != corev1.PodRunning {
			continue
		}
		used[pods[i].Spec.NodeName] = true
		for _, c := range pods[i].Spec.Containers {
			if q, ok := c.Resources.Limits[nvidia.DefaultCountName]; ok {
				p.Cards += int(q.Value())
			}
		}
	}
	p.Nodes, p.MinCards = len(used), p.Cards
	cardsPerNode := int64(0)
	for i := range nodes {
		if q, ok := nodes[i].Status.Allocatable[nvidia.DefaultCountName]; ok {
			cardsPerNode = max(cardsPerNode, q.Value())
		}
	}
	if cardsPerNode > 0 {
		p.MinNodes = int((int64(p.MinCards) + cardsPerNode - 1) / cardsPerNode)
	}
	return p
}

// deletePods removes a phase's pods at once and waits until they are
// gone, and their ResourceClaims with them: the resource claim controller
// releases and deallocates a claim once its pod is gone, and the garbage
// collector (the claims hami-scheduler writes, owned by their pods) or
// HAMi-DRA's webhook (its own, at the pod's deletion) deletes it. Claims
// still there once the pods are gone are deleted, so that the next phase
// starts with every card free.
func deletePods(ctx context.Context, client kubernetes.Interface, namespace string) error {
	// On HAMi-DRA's route every pod's deletion calls its webhook, one
	// after another inside the API server's DeleteCollection: a thousand
	// of them outlast the request (a timeout, or the stream reset) while
	// the server goes on deleting. The call is repeated until it returns.
	if err := retry.OnError(wait.Backoff{Steps: 10, Duration: time.Second, Factor: 1.5}, func(error) bool { return ctx.Err() == nil }, func() error {
		return client.CoreV1().Pods(namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}, metav1.ListOptions{})
	}); err != nil {
		return fmt.Errorf("delete pods of %s: %w", namespace, err)
	}
	if err := waitEmpty(ctx, "pods of "+namespace, func() (int, error) {
		list, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{Limit: 1})
		return len(list.Items), err
	}); err != nil {
		return err
	}
	claims := client.ResourceV1().ResourceClaims(namespace)
	if err := claims.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("delete claims of %s: %w", namespace, err)
	}
	return waitEmpty(ctx, "claims of "+namespace, func() (int, error) {
		list, err := claims.List(ctx, metav1.ListOptions{Limit: 1})
		return len(list.Items), err
	})
}

// waitEmpty waits up to a minute until count says nothing is left.
func waitEmpty(ctx context.Context, what string, count func() (int, error)) error {
	for range 300 {
		n, err := count()
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s still there a minute after their deletion", what)
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

// createPods creates a backlog with a few parallel clients.
func createPods(ctx context.Context, client kubernetes.Interface, n int, newPod func(int) *corev1.Pod) error {
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
				if _, err := client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
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
		next <- newPod(i)
	}
	close(next)
	wg.Wait()
	return first
}

// createSteadily creates pod i at i/rate seconds from now (or as soon after
// as it can), noting in created when its creation was asked for.
func createSteadily(ctx context.Context, client kubernetes.Interface, n int, rate float64, newPod func(int) *corev1.Pod, created []time.Time) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		slots = make(chan struct{}, 32)
	)
	start := time.Now()
	for i := range n {
		if wait := time.Until(start.Add(time.Duration(float64(i) / rate * float64(time.Second)))); wait > 0 {
			select {
			case <-ctx.Done():
				wg.Wait()
				return ctx.Err()
			case <-time.After(wait):
			}
		}
		slots <- struct{}{}
		created[i] = time.Now()
		p := newPod(i)
		wg.Go(func() {
			defer func() { <-slots }()
			if _, err := client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("create pod %s: %w", p.Name, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

// gangName names the PodGroup of pod i in gangs of size.
func gangName(i, size int) string { return "g-" + strconv.Itoa(i/size) }

// createPodGroups creates the PodGroups of pods in gangs of size (the last
// may be smaller), each of minMember its size.
func createPodGroups(ctx context.Context, cfg *rest.Config, namespace string, pods, size int) error {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	groups := client.Resource(v1alpha1.Resource).Namespace(namespace)
	for first := 0; first < pods; first += size {
		members := min(size, pods-first)
		pg := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": "PodGroup",
			"metadata": map[string]any{"name": gangName(first, size), "namespace": namespace},
			"spec":     map[string]any{"minMember": int64(members)},
		}}
		if _, err := groups.Create(ctx, pg, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create PodGroup %s: %w", pg.GetName(), err)
		}
	}
	return nil
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
// With percentOf set, a percentage of the card's memory is asked as that
// share of percentOf MiB instead (draSetup.percentAsMiB).
func mixedRequest(rng *rand.Rand, percentOf int64) gpuRequest {
	switch x := rng.IntN(100); {
	case x < 40:
		return gpuRequest{cards: 1, memory: []int64{1024, 2048, 4096, 8192}[rng.IntN(4)], cores: []int64{0, 10, 20, 30}[rng.IntN(4)]}
	case x < 65:
		percent := []int64{10, 25, 50}[rng.IntN(3)]
		if percentOf > 0 {
			return gpuRequest{cards: 1, memory: percent * percentOf / 100}
		}
		return gpuRequest{cards: 1, percent: percent}
	case x < 80:
		return gpuRequest{cards: 2, memory: 4096, cores: 20}
	case x < 90:
		return gpuRequest{cards: 1, cores: 100}
	default:
		return gpuRequest{cards: 1, memory: 16384, cores: 50}
	}
}

// Print writes the run as a table, one column per phase.
func (r *Result) Print(w io.Writer) {
	fmt.Fprintf(w, "End-to-end: %s; %d pods per phase\n%s\n", r.Options.Nodes, r.Options.Pods, r.NodeSide)
	fmt.Fprintln(w, "policy P: nodeSchedulerPolicy=P and gpuSchedulerPolicy=P, the queue bounds as shipped; P/qN: nodeQueueLimit=N and nodeQueueWait=0 instead (P/q0: none, HAMi's order); P/wD: nodeQueueWait=D; P/bD: burstQueueWait=D; P/gN: pods in gangs of N (a PodGroup each, members asking the same), P/sN: the same pods without gangs; time to Running from the scheduler's start (backlog) or the pod's creation (steady)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, f func(Phase) string) {
		fmt.Fprintf(tw, "%s\t", name)
		for _, p := range r.Phases {
			fmt.Fprintf(tw, "%s\t", f(p))
		}
		fmt.Fprintln(tw)
	}
	row("", Phase.Name)
	row("profile", func(p Phase) string { return p.Profile })
	row("arrival", func(p Phase) string {
		if p.Arrival == Steady {
			return fmt.Sprintf("%g pods/s", p.Rate)
		}
		return "backlog"
	})
	row("pods Running / failed", func(p Phase) string { return fmt.Sprintf("%d/%d / %d", p.Running, p.Pods, p.Failed) })
	row("time to all Running", func(p Phase) string { return p.Elapsed.Round(10 * time.Millisecond).String() })
	row("time to all bound", func(p Phase) string { return p.BindElapsed.Round(10 * time.Millisecond).String() })
	row("pods/s to Running", func(p Phase) string { return strconv.FormatFloat(p.PodsPerSecond(), 'f', 1, 64) })
	row("pods/s while arriving", func(p Phase) string {
		if p.Arrival != Steady {
			return "-"
		}
		return strconv.FormatFloat(p.Served, 'f', 1, 64)
	})
	row("time to Running p50", func(p Phase) string { return p.RunP50.Round(time.Millisecond).String() })
	row("time to Running p99", func(p Phase) string { return p.RunP99.Round(time.Millisecond).String() })
	row("attempt p50 / p99", func(p Phase) string {
		return formatQuantile(p.AttemptP50, p.P50Beyond) + " / " + formatQuantile(p.AttemptP99, p.P99Beyond)
	})
	row("attempts ok / unsched. / error", func(p Phase) string {
		return fmt.Sprintf("%.0f / %.0f / %.0f", p.Scheduled, p.Unschedulable, p.Errors)
	})
	row("algorithm: total (busy %)", func(p Phase) string {
		busy := 0.0
		if p.Elapsed > 0 {
			busy = 100 * p.Algorithm.sum / p.Elapsed.Seconds()
		}
		return fmt.Sprintf("%s (%.0f%%)", (time.Duration(p.Algorithm.sum * float64(time.Second))).Round(time.Millisecond), busy)
	})
	row("algorithm per pod", func(p Phase) string { return p.AlgorithmPerPod().Round(10 * time.Microsecond).String() })
	row("PreFilter per pod: all plugins / HAMi", func(p Phase) string { return perNode(p.PreFilter) })
	row("Filter per node: all plugins / HAMi", func(p Phase) string { return perNode(p.Filter) })
	row("Score per node: all plugins / HAMi", func(p Phase) string { return perNode(p.Score) })
	row("PreBind mean", func(p Phase) string { return p.PreBind.mean().Round(time.Millisecond).String() })
	row("node hand-over p50 / p99 (count)", func(p Phase) string {
		if p.HandOvers == 0 {
			return "-"
		}
		return fmt.Sprintf("%s / %s (%d)", p.HandOverP50.Round(time.Millisecond), p.HandOverP99.Round(time.Millisecond), p.HandOvers)
	})
	row("scheduler writes/pod", func(p Phase) string { return ratio(float64(p.Scheduler.total(true)), float64(p.Bound)) })
	row("scheduler reads/pod", func(p Phase) string { return ratio(float64(p.Scheduler.total(false)), float64(p.Bound)) })
	row("device plugin calls/pod", func(p Phase) string { return ratio(float64(p.DevicePlugin.calls()), float64(p.Bound)) })
	row("API latency: scheduler / device plugin", func(p Phase) string {
		mean := func(d time.Duration, n int64) string {
			if n == 0 {
				return "-"
			}
			return (d / time.Duration(n)).Round(100 * time.Microsecond).String()
		}
		return p.SchedulerLatency.Round(100*time.Microsecond).String() + " / " + mean(p.DevicePluginSpent, p.DevicePlugin.calls())
	})
	row("kubelet calls/pod", func(p Phase) string { return ratio(float64(p.Kubelet.calls()), float64(p.Bound)) })
	row("cards used (lower bound)", func(p Phase) string { return fmt.Sprintf("%d (%d)", p.Packing.Cards, p.Packing.MinCards) })
	row("nodes used (lower bound)", func(p Phase) string { return fmt.Sprintf("%d (%d)", p.Packing.Nodes, p.Packing.MinNodes) })
	row("whole nodes left free", func(p Phase) string { return strconv.Itoa(p.Packing.FreeNodes) })
	row("DRA cards used", func(p Phase) string { return strconv.Itoa(p.Packing.DRACards) })
	row("pods on DRA nodes (claims reserved)", func(p Phase) string { return fmt.Sprintf("%d (%d)", p.DRAPods, p.DRAReserved) })
	row("pods on the busiest node", func(p Phase) string { return strconv.Itoa(p.Packing.BusiestNode) })
	row("hand-over per pod: all nodes / busiest", func(p Phase) string {
		if p.HandOverPerPod == 0 {
			return "-"
		}
		return p.HandOverPerPod.Round(10*time.Millisecond).String() + " / " + p.BusiestPerPod.Round(10*time.Millisecond).String()
	})
	row("bound: busiest node's pods x its hand-over", func(p Phase) string {
		if p.HandOverBound() == 0 {
			return "-"
		}
		return fmt.Sprintf("%s (time / bound %.2f)", p.HandOverBound().Round(100*time.Millisecond), ratioOf(p.Elapsed, p.HandOverBound()))
	})
	row("CPU per pod: scheduler / cluster", func(p Phase) string { return p.cpuPerPod() })
	row("scheduler heap at the end (MiB)", func(p Phase) string { return mib(p.SchedulerHeap) })
	row("device cache: nodes / cards / pods", func(p Phase) string {
		return fmt.Sprintf("%d / %d / %d", p.Cache.Nodes, p.Cache.Cards, p.Cache.Pods)
	})
	_ = tw.Flush()
	if b := r.Baseline().PodsPerSecond(); b > 0 {
		for _, p := range r.Phases[1:] {
			fmt.Fprintf(w, "ratio %s / baseline pods/s: %.3f\n", p.Name(), p.PodsPerSecond()/b)
		}
	}
	printDRA(w, r)
	for _, p := range r.Phases {
		fmt.Fprintf(w, "%s: scheduler writes/pod: %s\n", p.Name(), p.Scheduler.breakdown(true, p.Bound))
		fmt.Fprintf(w, "%s: scheduler reads/pod: %s\n", p.Name(), p.Scheduler.breakdown(false, p.Bound))
		fmt.Fprintf(w, "%s: device plugin calls/pod: %s; kubelet: %s\n", p.Name(),
			p.DevicePlugin.breakdown(true, p.Bound)+"; "+p.DevicePlugin.breakdown(false, p.Bound), p.Kubelet.breakdown(true, p.Bound))
	}
	if len(r.Overcommitted) > 0 {
		fmt.Fprintf(w, "ACCOUNTING PROBLEMS:\n  %s\n", strings.Join(r.Overcommitted, "\n  "))
	}
}

// cpuPerPod formats the scheduler process's CPU time per pod and that of
// the rest of the cluster (the benchmark's process).
func (p Phase) cpuPerPod() string {
	if p.Running == 0 {
		return "-"
	}
	per := func(d time.Duration) string {
		return (d / time.Duration(p.Running)).Round(10 * time.Microsecond).String()
	}
	return per(p.SchedulerCPU) + " / " + per(p.ClusterCPU)
}

// perNode formats the plugins' time per node: all of them, then HAMi's.
func perNode(byPlugin map[string]time.Duration) string {
	if len(byPlugin) == 0 {
		return "-"
	}
	hami := "-"
	if d, ok := byPlugin[plugins.Name]; ok {
		hami = d.Round(100 * time.Nanosecond).String()
	}
	return PerNode(byPlugin).Round(100*time.Nanosecond).String() + " / " + hami
}

func mib(b uint64) string { return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) }

func ratio(n, d float64) string {
	if d == 0 {
		return "-"
	}
	return strconv.FormatFloat(n/d, 'f', 2, 64)
}

// phaseNamespace is the namespace of the phase's pods: its name, or on
// HAMi-DRA's route a short one. HAMi-DRA's webhook names a pod's claim
// reference namespace-pod-container, which must be a DNS label (63
// characters at most): a phase's full name ("hami-backlog-binpack-
// dra100-hami-dra-run-1", 42) leaves too little, and the API server
// refuses every pod the webhook mutates.
func phaseNamespace(ph Phase) string {
	name := strings.NewReplacer(" ", "-", "/", "-").Replace(ph.Name())
	if !ph.Setting.HAMiDRA {
		return name
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	return fmt.Sprintf("hami-dra-%08x", h.Sum32())
}
