package plugins

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/version"

	"github.com/hami-scheduler/hami-scheduler/devices"
	devicecache "github.com/hami-scheduler/hami-scheduler/plugins/cache"
	"github.com/hami-scheduler/hami-scheduler/plugins/handover"
	"github.com/hami-scheduler/hami-scheduler/plugins/nodelock"
)

// The scheduler's own metrics, next to kube-scheduler's on the same
// registry (legacyregistry, served on kube-scheduler's /metrics and, with
// --hami-metrics-bind-address, on a plain listener as HAMi's scheduler
// does). HAMi v2.10's card, pod and quota gauges are read from the device
// cache at scrape time by deviceCollector; the counters and histograms
// below are updated as things happen.
var (
	nodeLockWait = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: "hami", Subsystem: "scheduler", Name: "node_lock_wait_seconds",
		Help:           "Time PreBind waited for a node's hami.io/mutex.lock, by result (acquired, busy, error).",
		Buckets:        metrics.ExponentialBuckets(0.005, 2, 16),
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	handOverDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: "hami", Subsystem: "scheduler", Name: "handover_duration_seconds",
		Help:           "Time from PreBind writing a pod's device assignment to the device plugin setting its bind-phase, by result (success, failed).",
		Buckets:        metrics.ExponentialBuckets(0.05, 2, 14),
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	nodeLockTakeOvers = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "hami", Subsystem: "scheduler", Name: "node_lock_takeovers_total",
		Help:           "Node locks taken over from another holder, by reason (expired, future, malformed, holder_gone, not_holder, renewed).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	preBindFailures = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "hami", Subsystem: "scheduler", Name: "prebind_failures_total",
		Help:           "PreBind failures, by reason (fit, annotation, lock_busy, lock_error, pod_changed, pod_gone, patch_error).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	undecodableAnnotations = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "hami", Subsystem: "scheduler", Name: "undecodable_annotations_total",
		Help:           "Device annotations the cache could not use, by object (node: a vendor's inventory that cannot be decoded or used; pod: a device assignment that cannot be decoded), counted per informer event.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"object"})
)

// The values of each label above, every series of which is created at
// registration (at zero), so that a scrape shows them before the first
// event and a rate over them starts from zero.
var (
	lockWaitResults  = []string{"acquired", "busy", "error"}
	handOverResults  = []string{"success", "failed"}
	takeOverReasons  = []string{nodelock.TakeOverExpired, nodelock.TakeOverFuture, nodelock.TakeOverMalformed, nodelock.TakeOverHolderGone, nodelock.TakeOverNotHolder, nodelock.TakeOverRenewed}
	preBindReasons   = []string{"fit", "annotation", "lock_busy", "lock_error", "pod_changed", "pod_gone", "patch_error", "claim"}
	undecodableKinds = []string{"node", "pod"}
)

var registerOnce sync.Once

// RegisterMetrics registers the plugin's metrics on legacyregistry, once
// per process (New does it too), each series of a known label value at
// zero. The cache gauges have no series until a profile enabling the
// plugin starts.
func RegisterMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(nodeLockWait, handOverDuration, nodeLockTakeOvers, preBindFailures, undecodableAnnotations)
		legacyregistry.CustomMustRegister(newDeviceCollector(metricSources.list), newBuildInfoCollector())
		initSeries()
	})
}

// initSeries creates every series of a known label value.
func initSeries() {
	for _, r := range lockWaitResults {
		nodeLockWait.WithLabelValues(r)
	}
	for _, r := range handOverResults {
		handOverDuration.WithLabelValues(r)
	}
	for _, r := range takeOverReasons {
		nodeLockTakeOvers.WithLabelValues(r)
	}
	for _, r := range preBindReasons {
		preBindFailures.WithLabelValues(r)
	}
	for _, k := range undecodableKinds {
		undecodableAnnotations.WithLabelValues(k)
	}
}

// lockObserver feeds the node-lock metrics.
var lockObserver = nodelock.Observer{
	Waited: func(d time.Duration, err error) {
		result := "acquired"
		switch {
		case errors.Is(err, nodelock.ErrBusy):
			result = "busy"
		case err != nil:
			result = "error"
		}
		nodeLockWait.WithLabelValues(result).Observe(d.Seconds())
	},
	TookOver: func(reason string) { nodeLockTakeOvers.WithLabelValues(reason).Inc() },
}

// preBindFailed counts a PreBind failure by reason.
func preBindFailed(reason string) { preBindFailures.WithLabelValues(reason).Inc() }

// patchFailure names why the assignment patch failed.
func patchFailure(err error) string {
	switch {
	case apierrors.IsNotFound(err):
		return "pod_gone"
	case apierrors.IsConflict(err), apierrors.IsInvalid(err):
		// The patch tests the pod's UID and the annotation maps.
		return "pod_changed"
	}
	return "patch_error"
}

// lockFailure names why the node lock could not be taken.
func lockFailure(err error) string {
	if errors.Is(err, nodelock.ErrBusy) {
		return "lock_busy"
	}
	return "lock_error"
}

// handOvers remembers when PreBind handed each pod to its node, until the
// device plugin sets the pod's bind-phase (or the pod goes).
type handOvers struct {
	mu sync.Mutex
	at map[types.UID]time.Time
}

func (h *handOvers) start(uid types.UID, t time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.at == nil {
		h.at = map[types.UID]time.Time{}
	}
	h.at[uid] = t
}

// drop forgets a pod without observing it.
func (h *handOvers) drop(uid types.UID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.at, uid)
}

// observe records the hand-over of pod when its bind-phase says the device
// plugin is done with it.
func (h *handOvers) observe(pod *corev1.Pod, now time.Time) {
	result := handover.Result(pod)
	if result == "" {
		return
	}
	h.mu.Lock()
	start, ok := h.at[pod.UID]
	delete(h.at, pod.UID)
	h.mu.Unlock()
	if ok {
		handOverDuration.WithLabelValues(result).Observe(now.Sub(start).Seconds())
	}
}

// sourceSet is the plugins (one per scheduler profile enabling HAMi) whose
// caches the process-wide collector reads.
type sourceSet struct {
	mu      sync.Mutex
	plugins []*Plugin
}

var metricSources sourceSet

// add registers p until ctx ends.
func (s *sourceSet) add(ctx context.Context, p *Plugin) {
	s.mu.Lock()
	s.plugins = append(s.plugins, p)
	s.mu.Unlock()
	go func() {
		<-ctx.Done()
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, q := range s.plugins {
			if q == p {
				s.plugins = append(s.plugins[:i:i], s.plugins[i+1:]...)
				break
			}
		}
	}()
}

func (s *sourceSet) list() []*Plugin {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Plugin(nil), s.plugins...)
}

// HAMi v2.10's scheduler gauges (names, labels and units as HAMi's),
// which deviceCollector reads from the device cache at scrape time.
const (
	metricGPUMemoryLimit      = "hami_gpu_memory_limit_bytes"
	metricGPUCoreLimit        = "hami_gpu_core_limit_ratio"
	metricGPUMemoryAllocated  = "hami_gpu_memory_allocated_bytes"
	metricGPUSharedCount      = "hami_gpu_shared_count"
	metricGPUCoreAllocated    = "hami_gpu_core_allocated_ratio"
	metricNodeGPUOverview     = "hami_node_gpu_overview"
	metricNodeGPUMemoryRatio  = "hami_node_gpu_memory_allocated_ratio"
	metricNodeGPUMIGInstance  = "hami_node_gpu_mig_instance_info"
	metricResourceQuotaUsed   = "hami_resource_quota_used"
	metricResourceQuotaLimit  = "hami_resource_quota_limit"
	metricVGPUMemoryAllocated = "hami_vgpu_memory_allocated_bytes"
	metricVGPUCoreAllocated   = "hami_vgpu_core_allocated_ratio"
	metricSchedulerCacheSize  = "hami_scheduler_cache_size"
	metricBuildInfo           = "hami_build_info"
)

// DeviceGauges are HAMi's card, pod and quota gauges: what HAMi's
// scheduler serves from its leader only (its Service selects the leading
// pod), and so what a ServiceMonitor must not get from two replicas.
var DeviceGauges = []string{
	metricGPUMemoryLimit, metricGPUCoreLimit, metricGPUMemoryAllocated, metricGPUSharedCount, metricGPUCoreAllocated,
	metricNodeGPUOverview, metricNodeGPUMemoryRatio, metricNodeGPUMIGInstance,
	metricResourceQuotaUsed, metricResourceQuotaLimit, metricVGPUMemoryAllocated, metricVGPUCoreAllocated,
}

// mib is a MiB in bytes: HAMi's metrics give memory in bytes.
const mib = 1 << 20

// deviceCollector renders HAMi v2.10's scheduler gauges (cmd/scheduler/
// metrics.go: names, labels, zone="vGPU") and the cache sizes from the
// device caches of sources, at scrape time. Several profiles enabling HAMi
// see the same nodes and pods: each series is emitted once, from the first
// source that has it.
type deviceCollector struct {
	metrics.BaseStableCollector
	sources func() []*Plugin

	memoryLimit, coreLimit, memoryAllocated, sharedCount, coreAllocated *metrics.Desc
	overview, memoryRatio, migInstance                                  *metrics.Desc
	quotaUsed, quotaLimit                                               *metrics.Desc
	podMemory, podCores                                                 *metrics.Desc
	cacheSize                                                           *metrics.Desc
}

func newDeviceCollector(sources func() []*Plugin) *deviceCollector {
	zone := metrics.Labels{"zone": "vGPU"}
	card := []string{"node", "device_uuid", "device_index", "device_type"}
	cardCores := []string{"node", "device_uuid", "device_index", "device_cores", "device_type"}
	pod := []string{"namespace", "node", "pod", "container_index", "device_uuid"}
	desc := func(name, help string, labels []string, constLabels metrics.Labels) *metrics.Desc {
		return metrics.NewDesc(name, help, labels, constLabels, metrics.ALPHA, "")
	}
	return &deviceCollector{
		sources:         sources,
		memoryLimit:     desc(metricGPUMemoryLimit, "Device memory limit for a certain GPU", card, zone),
		coreLimit:       desc(metricGPUCoreLimit, "Device core limit for a certain GPU", card, zone),
		memoryAllocated: desc(metricGPUMemoryAllocated, "Device memory allocated for a certain GPU", cardCores, zone),
		sharedCount:     desc(metricGPUSharedCount, "Number of containers sharing this GPU", card, zone),
		coreAllocated:   desc(metricGPUCoreAllocated, "Device core allocated for a certain GPU", card, zone),
		overview: desc(metricNodeGPUOverview, "GPU overview on a certain node",
			[]string{"node", "device_uuid", "device_index", "device_cores", "device_memory_limit", "device_type"}, zone),
		memoryRatio: desc(metricNodeGPUMemoryRatio, "GPU Memory Allocated Percentage on a certain GPU", card, zone),
		migInstance: desc(metricNodeGPUMIGInstance, "Realized MIG instance identity and scheduler placement",
			[]string{"node", "device_uuid", "device_index", "mig_uuid", "profile", "gpu_instance_id", "compute_instance_id", "placement_start", "placement_size"}, zone),
		quotaUsed:  desc(metricResourceQuotaUsed, "resourcequota usage for a certain device", []string{"namespace", "quota_name", "limit"}, zone),
		quotaLimit: desc(metricResourceQuotaLimit, "resourcequota limit for a certain device", []string{"namespace", "quota_name"}, zone),
		podMemory:  desc(metricVGPUMemoryAllocated, "vGPU memory allocated from a container", pod, zone),
		podCores:   desc(metricVGPUCoreAllocated, "vGPU core allocated from a container", pod, zone),
		cacheSize: desc(metricSchedulerCacheSize, "Objects in the scheduler's device cache, by kind (nodes, cards, pods, assumed_pods, unreadable_pods)",
			[]string{"kind"}, nil),
	}
}

// DescribeWithStability implements metrics.StableCollector.
func (c *deviceCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	for _, d := range []*metrics.Desc{c.memoryLimit, c.coreLimit, c.memoryAllocated, c.sharedCount, c.coreAllocated,
		c.overview, c.memoryRatio, c.migInstance, c.quotaUsed, c.quotaLimit, c.podMemory, c.podCores, c.cacheSize} {
		ch <- d
	}
}

// normalizedCores is HAMi's core unit for AMD cards, whose registered
// cores are compute units: the limit reads 100 and the use a percentage
// (rounded up).
func normalizedCores(model string, total int32, used int64) (float64, float64) {
	if !strings.HasPrefix(strings.ToUpper(model), "AMD") || total <= 0 {
		return float64(total), float64(used)
	}
	return 100, math.Ceil(float64(used) / float64(total) * 100)
}

// cardKey names a card on a node.
type cardKey struct{ node, uuid string }

// CollectWithStability implements metrics.StableCollector.
func (c *deviceCollector) CollectWithStability(ch chan<- metrics.Metric) {
	sources := c.sources()
	if len(sources) == 0 {
		return
	}
	gauge := func(d *metrics.Desc, v float64, labels ...string) {
		ch <- metrics.NewLazyConstMetric(d, metrics.GaugeValue, v, labels...)
	}
	cards := map[cardKey]cardRef{}
	for _, p := range sources {
		for _, nc := range p.cache.AllCards() {
			c.collectCards(cards, gauge, nc)
		}
		for _, nc := range p.draNodeCards() {
			c.collectCards(cards, gauge, nc)
		}
	}
	type podCard struct {
		uid  types.UID
		uuid string
	}
	pods := map[podCard]bool{}
	migs := map[cardKey]bool{}
	for _, p := range sources {
		for _, h := range p.cache.AllHoldings() {
			for vi, a := range h.Assignments {
				for _, use := range devicecache.AssignmentCardUse(a, h.Inits) {
					key := podCard{h.UID, use.UUID}
					if use.UUID == "" || pods[key] {
						continue
					}
					pods[key] = true
					ref := cards[cardKey{h.Node, use.UUID}]
					_, cores := normalizedCores(ref.model, ref.cores, use.Cores)
					gauge(c.podMemory, float64(use.MemoryMiB)*mib, h.Namespace, h.Node, h.Name, "0", use.UUID)
					gauge(c.podCores, cores, h.Namespace, h.Node, h.Name, "0", use.UUID)
				}
				if vi >= len(h.Slices) {
					continue
				}
				for _, r := range h.Slices[vi] {
					ref, known := cards[cardKey{h.Node, r.UUID}]
					if !r.Runtime.Ready() || !known || migs[cardKey{h.Node, r.Runtime.UUID}] {
						continue
					}
					migs[cardKey{h.Node, r.Runtime.UUID}] = true
					gauge(c.migInstance, 1, h.Node, r.UUID, strconv.Itoa(ref.index), r.Runtime.UUID, r.Profile,
						strconv.FormatUint(uint64(r.Runtime.GPUInstance), 10), strconv.FormatUint(uint64(r.Runtime.ComputeInstance), 10),
						strconv.FormatUint(uint64(r.Placement.Start), 10), strconv.FormatUint(uint64(r.Placement.Size), 10))
				}
			}
		}
	}
	c.collectQuotas(sources, gauge)
	s := sources[0].cache.Stats()
	gauge(c.cacheSize, float64(s.Nodes), "nodes")
	gauge(c.cacheSize, float64(s.Cards), "cards")
	gauge(c.cacheSize, float64(s.Pods), "pods")
	gauge(c.cacheSize, float64(s.AssumedPods), "assumed_pods")
	gauge(c.cacheSize, float64(s.UnreadablePods), "unreadable_pods")
}

// collectCards renders the card gauges of one node's cards of a vendor,
// each card (by node and UUID) once: the first source, and the first
// account, that has it.
func (c *deviceCollector) collectCards(cards map[cardKey]cardRef, gauge func(*metrics.Desc, float64, ...string), nc devicecache.NodeCards) {
	for i, card := range nc.Cards {
		key := cardKey{nc.Node, card.UUID}
		if _, seen := cards[key]; seen {
			continue
		}
		cards[key] = cardRef{index: card.Index, model: card.Model, cores: card.Cores}
		u := nc.Used[i]
		index := strconv.Itoa(card.Index)
		totalCores := strconv.Itoa(int(card.Cores))
		coreLimit, coreUsed := normalizedCores(card.Model, card.Cores, u.Cores)
		gauge(c.memoryLimit, float64(card.MemoryMiB)*mib, nc.Node, card.UUID, index, card.Model)
		gauge(c.coreLimit, coreLimit, nc.Node, card.UUID, index, card.Model)
		gauge(c.memoryAllocated, float64(u.MemoryMiB)*mib, nc.Node, card.UUID, index, totalCores, card.Model)
		gauge(c.sharedCount, float64(u.Sharers), nc.Node, card.UUID, index, card.Model)
		gauge(c.coreAllocated, coreUsed, nc.Node, card.UUID, index, card.Model)
		gauge(c.overview, float64(u.MemoryMiB)*mib, nc.Node, card.UUID, index, totalCores, strconv.Itoa(int(card.MemoryMiB)), card.Model)
		if card.MemoryMiB > 0 {
			gauge(c.memoryRatio, float64(u.MemoryMiB)/float64(card.MemoryMiB), nc.Node, card.UUID, index, card.Model)
		}
	}
}

// draNodeCards are the cards DRA drivers publish that the scheduler
// accounts as DRA cards (accountedCards: a node's vendor no device plugin
// registers), with what every allocated claim takes of them (HAMi's,
// HAMi-DRA's, native ones: kube-scheduler's DRA manager's account) and
// what pods a device plugin served there before the node moved hold;
// none without DRA nodes.
func (p *Plugin) draNodeCards() []devicecache.NodeCards {
	view := p.scrapeDRAView()
	if view == nil {
		return nil
	}
	var out []devicecache.NodeCards
	for _, node := range view.nodes() {
		for vi := range p.registry.Vendors() {
			cards, used, onDRA, err := p.accountedCards(view, node, vi, nil)
			if err == nil && onDRA {
				out = append(out, devicecache.NodeCards{Node: node, Vendor: vi, Cards: cards, Used: used})
			}
		}
	}
	return out
}

// scrapeDRAView is a view of the DRA account for one scrape; nil without DRA
// cards or when it cannot be read.
func (p *Plugin) scrapeDRAView() draView {
	if p.dra == nil {
		return nil
	}
	view, err := p.dra.view()
	if err != nil {
		return nil
	}
	return view
}

// cardRef is what the per-pod and MIG series need of a card.
type cardRef struct {
	index int
	model string
	cores int32
}

// collectQuotas renders, per namespace and device resource (quota_name is
// the resource, e.g. nvidia.com/gpumem, as HAMi's), what the namespace's
// pods hold and its ResourceQuota limit: a row for every resource with a
// limit or with use.
func (c *deviceCollector) collectQuotas(sources []*Plugin, gauge func(*metrics.Desc, float64, ...string)) {
	type row struct {
		ns   string
		name corev1.ResourceName
	}
	seen := map[row]bool{}
	for _, p := range sources {
		used := map[row]int64{}
		add := func(ns string, v devices.Vendor, memoryMiB, cores int64) {
			r := v.Resources()
			if r.Memory != "" {
				used[row{ns, r.Memory}] += memoryMiB
			}
			if r.Cores != "" {
				used[row{ns, r.Cores}] += cores
			}
		}
		for ns, uses := range p.cache.NamespaceUses() {
			for vi, v := range p.registry.Vendors() {
				if vi >= len(uses) {
					break
				}
				add(ns, v, uses[vi].MemoryMiB, uses[vi].Cores)
			}
		}
		// What the namespaces' claims take of DRA cards counts in the
		// quota as the scheduler checks it (quota.go).
		if view := p.scrapeDRAView(); view != nil {
			for _, ns := range view.claimNamespaces() {
				for vi, v := range p.registry.Vendors() {
					memoryMiB, cores := view.namespaceUse(ns, vi)
					add(ns, v, memoryMiB, cores)
				}
			}
		}
		limits := p.quotas.all()
		for ns, byName := range limits {
			for name := range byName {
				if _, ok := used[row{ns, name}]; !ok {
					used[row{ns, name}] = 0
				}
			}
		}
		for k, u := range used {
			limit, set := limits[k.ns][k.name]
			if seen[k] || (u == 0 && !set) {
				continue
			}
			seen[k] = true
			gauge(c.quotaUsed, float64(u), k.ns, string(k.name), strconv.FormatInt(limit, 10))
			if set {
				gauge(c.quotaLimit, float64(limit), k.ns, string(k.name))
			}
		}
	}
}

// buildInfoCollector is HAMi's hami_build_info (no zone label), from the
// version kube-scheduler reports (the Makefile sets it).
type buildInfoCollector struct {
	metrics.BaseStableCollector
	desc *metrics.Desc
}

func newBuildInfoCollector() *buildInfoCollector {
	return &buildInfoCollector{desc: metrics.NewDesc(metricBuildInfo, "A metric with a constant '1' value labeled by version, revision, build date, Go version, compiler and platform.",
		[]string{"version", "revision", "build_date", "go_version", "compiler", "platform"}, nil, metrics.ALPHA, "")}
}

// DescribeWithStability implements metrics.StableCollector.
func (c *buildInfoCollector) DescribeWithStability(ch chan<- *metrics.Desc) { ch <- c.desc }

// CollectWithStability implements metrics.StableCollector.
func (c *buildInfoCollector) CollectWithStability(ch chan<- metrics.Metric) {
	v := version.Get()
	ch <- metrics.NewLazyConstMetric(c.desc, metrics.GaugeValue, 1, v.GitVersion, v.GitCommit, v.BuildDate, runtime.Version(), runtime.Compiler, runtime.GOOS+"/"+runtime.GOARCH)
}
