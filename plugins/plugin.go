// Package plugins is hami-scheduler's kube-scheduler side: one framework
// plugin, HAMi, that fits pods onto shared devices over an informer-fed
// device cache (plugins/cache, fed by informers.go) and takes HAMi's node
// lock (plugins/nodelock) before binding.
//
// Its extension points, and the files that hold them (a file suffixed
// _sinceX or _untilY is built for those kube-scheduler minors only):
//
//   - PreFilter: prefilter.go, entered from prefilter_entry_since1.34.go
//     and prefilter_entry_until1.33.go; candidate nodes in candidates.go,
//     a pod-group cycle in gang_podgroupcycle_since1.34.go.
//   - PreFilterExtensions (AddPod, RemovePod): preemption.go.
//   - Filter: filter.go (card counts in countfit_since1.34.go, quotas in
//     quota.go; DRA nodes through draroute_since1.34.go and dra.go).
//   - PostFilter: postfilter.go.
//   - PreScore, Score and NormalizeScore (ScoreExtensions): score.go,
//     Score entered from score_entry_since1.31.go and
//     score_entry_until1.30.go; vendor node scores in vendorscore.go, the
//     ranking by hand-over queues in handover.go (plugins/handover).
//   - Reserve and Unreserve: reserve.go (DRA nodes: dra.go).
//   - PreBindPreFlight: prebind_preflight_since1.34.go.
//   - PreBind: prebind.go (vendor locks in nodelock.go, a gang's binding
//     round in gang_bind.go).
//   - PostBind: postbind.go.
//   - SignPod: sign_since1.34.go (the signature in signature.go).
//   - EnqueueExtensions (EventsToRegister and its queueing hints):
//     enqueue.go, entered from enqueue_entry_since1.31.go and
//     enqueue_entry_until1.30.go, DRA events in enqueue_dra_since1.34.go;
//     the pods Filter turned away are activated again in enqueue_rejected.go.
//
// HAMi's events are recorded by events.go, the metrics kept in
// metrics.go, and the cycle state is state.go's; Simulate (simulation.go)
// places pods as Filter would, for cardfit.
package plugins

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/apis/config"
	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/vendors"
	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
	devicecache "github.com/hami-scheduler/hami-scheduler/plugins/cache"
	"github.com/hami-scheduler/hami-scheduler/plugins/handover"
	"github.com/hami-scheduler/hami-scheduler/plugins/nodelock"
)

// Name is the plugin's name in a KubeSchedulerConfiguration profile.
const Name = "HAMi"

// Plugin fits pods that ask for shared devices onto nodes' cards.
type Plugin struct {
	handle   fwk.Handle
	args     *config.HAMiArgs
	registry *devices.Registry
	cache    *devicecache.Cache
	locker   *nodelock.Locker
	// rejected are the pods Filter turned away for lack of devices.
	rejected rejectedPods
	// quotas are the namespaces' device limits.
	quotas quotaLimits
	// pods and nodes read the pod and node informers' stores.
	pods  corelisters.PodLister
	nodes corelisters.NodeLister
	// fullPass are the pods owed a cycle on every node (candidates.go).
	fullPass fullPasses
	// synced reports whether the cache has seen every node and pod the
	// informers listed at start.
	synced func() bool
	// handOvers times each pod's hand-over to its device plugin.
	handOvers handOvers
	// queues counts the pods being handed over to each node.
	queues handover.Queues
	// waiting counts the pods still waiting to be placed, per scheduler;
	// bursts remembers the backlogs they made (plugins/handover).
	waiting handover.Waiting
	bursts  handover.Bursts
	// resumed keeps the cards of gang members another scheduler process
	// handed over and did not bind (gang_resume.go).
	resumed resumedHandOvers
	// lockHolders indexes the node locks by their holder, to release
	// those a killed scheduler process left (nodelock/holders.go).
	lockHolders nodelock.Holders
	// dra places pods on DRA nodes (dra.go); nil without them.
	dra draRoute
	// gangs binds the members of a gang as one round (gang_bind.go).
	gangs gangBindings
}

var (
	_ fwk.PreFilterPlugin     = &Plugin{}
	_ fwk.FilterPlugin        = &Plugin{}
	_ fwk.ScorePlugin         = &Plugin{}
	_ fwk.ReservePlugin       = &Plugin{}
	_ fwk.PreBindPlugin       = &Plugin{}
	_ fwk.EnqueueExtensions   = &Plugin{}
	_ fwk.PreFilterExtensions = &Plugin{}
	_ fwk.PostFilterPlugin    = &Plugin{}
	_ fwk.PostBindPlugin      = &Plugin{}
)

// New builds the plugin from its args and wires the device cache to the
// scheduler's shared informers.
func New(ctx context.Context, obj runtime.Object, handle fwk.Handle) (fwk.Plugin, error) {
	logger := klog.FromContext(ctx)
	args, err := pluginArgs(obj)
	if err != nil {
		return nil, err
	}
	settings, err := resolveVendors(logger, args)
	if err != nil {
		return nil, err
	}
	registry, err := vendors.NewRegistry(settings.Configs)
	if err != nil {
		return nil, fmt.Errorf("%s args: %w", Name, err)
	}
	p := &Plugin{
		handle:   handle,
		args:     args,
		registry: registry,
		cache:    devicecache.New(registry),
		locker:   nodelock.New(handle.ClientSet(), args.NodeLockExpiry.Duration, args.NodeLockWait.Duration),
	}
	RegisterMetrics()
	p.locker.Observer = lockObserver
	p.locker.Served = p.servedByLockingPlugin
	if err := p.watch(logger); err != nil {
		return nil, err
	}
	dra, draSynced, err := newDRARoute(logger, handle, registry, devices.SplitCounts(registry.Vendors(), settings.Configs))
	if err != nil {
		return nil, err
	}
	p.dra = dra
	cacheSynced := p.synced
	p.synced = func() bool { return cacheSynced() && draSynced() }
	metricSources.add(ctx, p)
	register(ctx, handle, p)
	return p, nil
}

// Name implements fwk.Plugin.
func (p *Plugin) Name() string { return Name }

// Synced reports whether the device cache has seen every node and pod the
// informers listed at start.
func (p *Plugin) Synced() bool { return p.synced() }

// Cache exposes the device cache, for tests and diagnostics.
func (p *Plugin) Cache() *devicecache.Cache { return p.cache }

// watch feeds the cache from the shared node and pod informers, and the
// quota limits from the ResourceQuota informer.
func (p *Plugin) watch(logger klog.Logger) error {
	informers := p.handle.SharedInformerFactory()
	if informers == nil {
		return fmt.Errorf("%s needs the scheduler's shared informer factory", Name)
	}
	nodes, err := informers.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.onNodeAdd(logger, obj) },
		UpdateFunc: func(old, obj any) { p.onNodeUpdate(logger, old, obj) },
		DeleteFunc: func(obj any) { p.onNodeDelete(logger, obj) },
	})
	if err != nil {
		return fmt.Errorf("watch nodes: %w", err)
	}
	p.pods = informers.Core().V1().Pods().Lister()
	p.nodes = informers.Core().V1().Nodes().Lister()
	p.locker.ReadFrom(informers.Core().V1().Nodes().Lister(), p.pods)
	pods, err := informers.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.onPodSet(logger, obj) },
		UpdateFunc: func(_, obj any) { p.onPodSet(logger, obj) },
		DeleteFunc: func(obj any) { p.onPodDelete(logger, obj) },
	})
	if err != nil {
		return fmt.Errorf("watch pods: %w", err)
	}
	quotas, err := p.watchQuotas()
	if err != nil {
		return fmt.Errorf("watch resource quotas: %w", err)
	}
	p.synced = func() bool { return nodes.HasSynced() && pods.HasSynced() && quotas.HasSynced() }
	return nil
}
