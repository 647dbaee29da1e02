// Package coscheduling is hami-scheduler's gang plugin: it places the pods
// of a scheduler-plugins PodGroup (scheduling.x-k8s.io/v1alpha1, pods
// labelled scheduling.x-k8s.io/pod-group) all together or not at all, as
// scheduler-plugins' Coscheduling plugin does, and with the HAMi plugin's
// device cache it turns away before any card is reserved a group whose
// devices cannot fit together. It keeps each PodGroup's status as
// scheduler-plugins' PodGroup controller does. See README.md.
package coscheduling

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hami-scheduler/hami-scheduler/apis/config"
	"github.com/hami-scheduler/hami-scheduler/apis/config/scheme"
	"github.com/hami-scheduler/hami-scheduler/apis/config/validation"
	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
	"github.com/hami-scheduler/hami-scheduler/plugins"
)

// Name is the plugin's name in a KubeSchedulerConfiguration profile,
// scheduler-plugins' own, so that its users' profiles keep working.
const Name = "Coscheduling"

// Plugin places PodGroups' pods all together or not at all.
type Plugin struct {
	handle fwk.Handle
	args   *config.CoschedulingArgs
	clock  clock.PassiveClock

	groups  *podGroups
	members *memberPods
	// served is whether the API server served PodGroups when the plugin
	// started: only then does the framework watch them for requeueing.
	served bool
	// permitted are the members past Permit and not bound yet.
	permitted permitted
	// failures are the groups' last rejections and backoffs.
	failures groupFailures
	// waits are the groups whose placed members wait at Permit.
	waits groupWaits
	// resourcesChecked are the groups whose minResources were found free.
	resourcesChecked checkedGroups
	// status keeps the PodGroups' status; nil when the args turn it off.
	status *statusUpdater
	// reservations publishes the cards the waiting members hold.
	reservations *reservationPublisher
	// scheduling is set once the framework schedules a pod with the plugin:
	// from then on pods may wait in its queue, and activating them is
	// possible (the framework gets its queue after the plugins are built).
	scheduling atomic.Bool
}

var (
	_ fwk.QueueSortPlugin   = &Plugin{}
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.PostFilterPlugin  = &Plugin{}
	_ fwk.PermitPlugin      = &Plugin{}
	_ fwk.ReservePlugin     = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
)

// New builds the plugin from its args and starts its PodGroup and member
// pod informers (they sync in the background; members are not scheduled
// before they have).
func New(ctx context.Context, obj runtime.Object, handle fwk.Handle) (fwk.Plugin, error) {
	logger := klog.FromContext(ctx)
	args, err := scheme.CoschedulingArgsFrom(obj)
	if err != nil {
		return nil, fmt.Errorf("%s args: %w", Name, err)
	}
	if errs := validation.ValidateCoschedulingArgs(nil, args); len(errs) > 0 {
		return nil, fmt.Errorf("%s args: %w", Name, errs.ToAggregate())
	}
	cfg := handle.KubeConfig()
	if cfg == nil {
		return nil, fmt.Errorf("%s needs the scheduler's kubeconfig", Name)
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s PodGroup client: %w", Name, err)
	}
	isServed, err := served(cfg)
	switch {
	case err != nil:
		logger.Error(err, "Cannot tell whether the API server serves PodGroups; members are requeued by the plugin's own informer only", "resource", "podgroups.scheduling.x-k8s.io")
	case !isServed:
		logger.Info("The API server serves no PodGroups (scheduling.x-k8s.io/v1alpha1): pods labelled with a group wait until the CRD is installed; restart hami-scheduler after installing it", "label", podGroupLabel)
	}
	return start(ctx, handle, args, client, isServed)
}

// start builds the plugin over the given PodGroup client and starts its
// informers and workers until ctx ends.
func start(ctx context.Context, handle fwk.Handle, args *config.CoschedulingArgs, client dynamic.Interface, isServed bool) (*Plugin, error) {
	logger := klog.FromContext(ctx)
	p := &Plugin{handle: handle, args: args, clock: clock.RealClock{}, served: isServed}
	var err error
	if p.groups, err = newPodGroups(client); err != nil {
		return nil, err
	}
	if p.members, err = newMemberPods(handle.ClientSet()); err != nil {
		return nil, err
	}
	p.reservations = newReservationPublisher(p)
	if args.UpdatePodGroupStatus {
		p.status = newStatusUpdater(p)
	}
	if err := p.watch(logger); err != nil {
		return nil, err
	}
	plugins.RegisterGangObjects(ctx, handle, p.groupObject)
	go p.groups.informer.Run(ctx.Done())
	go p.members.informer.Run(ctx.Done())
	go p.reservations.run(ctx)
	if p.status != nil {
		go p.status.run(ctx)
	}
	return p, nil
}

// Name implements fwk.Plugin.
func (p *Plugin) Name() string { return Name }

// synced reports whether both informers have listed everything.
func (p *Plugin) synced() bool {
	return p.groups.informer.HasSynced() && p.members.informer.HasSynced()
}

// hami is the HAMi plugin of the same profile, nil when it runs none.
func (p *Plugin) hami() *plugins.Plugin { return plugins.ForProfile(p.handle) }

// permitWait is how long placed members of pg wait for the rest:
// the PodGroup's scheduleTimeoutSeconds when set and positive, else the
// args' permitWaitingTimeSeconds, else 60 s.
func (p *Plugin) permitWait(timeout *int32) time.Duration {
	if timeout != nil && *timeout > 0 {
		return time.Duration(*timeout) * time.Second
	}
	if p.args.PermitWaitingTimeSeconds > 0 {
		return time.Duration(p.args.PermitWaitingTimeSeconds) * time.Second
	}
	return 60 * time.Second
}

// watch keeps the plugin's bookkeeping current from its informers: a
// deleted pod leaves the permitted set, a PodGroup's status and the
// waiting pods' requeueing follow their changes.
func (p *Plugin) watch(logger klog.Logger) error {
	_, err := p.members.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.onMemberChange(logger, nil, obj) },
		UpdateFunc: func(old, obj any) { p.onMemberChange(logger, old, obj) },
		DeleteFunc: func(obj any) { p.onMemberDelete(logger, obj) },
	})
	if err != nil {
		return fmt.Errorf("watch member pods: %w", err)
	}
	_, err = p.groups.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.onGroupChange(logger, nil, obj) },
		UpdateFunc: func(old, obj any) { p.onGroupChange(logger, old, obj) },
		DeleteFunc: func(obj any) { p.onGroupDelete(logger, obj) },
	})
	if err != nil {
		return fmt.Errorf("watch PodGroups: %w", err)
	}
	return nil
}
