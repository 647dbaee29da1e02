package localcluster

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	hamiv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
	"github.com/hami-scheduler/hami-scheduler/cardfit"
	"github.com/hami-scheduler/hami-scheduler/plugins"
	"github.com/hami-scheduler/hami-scheduler/scheduler/profile"
)

// SchedulerOptions configure StartScheduler.
type SchedulerOptions struct {
	// Args configure the HAMi plugin; nil leaves its defaults.
	Args *hamiv1.HAMiArgs
	// LeaderElection, if set, makes the scheduler one of several replicas:
	// it schedules only while it holds the lease, as kube-scheduler does.
	LeaderElection *LeaderElection
	// Plugins are out-of-tree plugins a test adds beside HAMi's and
	// Coscheduling, for Profile to enable.
	Plugins frameworkruntime.Registry
	// Profile, if set, changes the profiles (hami-scheduler's, then
	// default-scheduler's) before the scheduler is built: a test's
	// departure from the shipped configuration, in plain sight.
	Profile func(*config.KubeSchedulerProfile)
	// CardFit, if set, runs Kueue's admission check hami.io/card-fit on
	// the hami-scheduler profile's device cache while this scheduler leads,
	// as hami-scheduler --hami-kueue-card-fit does.
	CardFit *cardfit.Options
}

// LeaderElection configures a replica's leader election on a Lease.
type LeaderElection struct {
	// Identity names this replica in the lease.
	Identity string
	// Namespace and Name locate the Lease.
	Namespace, Name string
	// LeaseDuration, RenewDeadline and RetryPeriod as in kube-scheduler's
	// leaderElection settings.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Scheduler is kube-scheduler running in this process with two profiles:
// hami-scheduler (scheduler/profile) and default-scheduler, which stands in
// for the kube-scheduler a real cluster runs beside hami-scheduler.
type Scheduler struct {
	// Scheduler is the running scheduler.
	*scheduler.Scheduler

	cancel    context.CancelFunc
	done      sync.WaitGroup
	cardFit   *cardfit.Options
	informers informers.SharedInformerFactory
	// dynamic watches the custom resources plugins register events for
	// (PodGroups), as kube-scheduler's own factory of that kind.
	dynamic dynamicinformer.DynamicSharedInformerFactory
	events  events.EventBroadcasterAdapter
	leading atomic.Bool
	// plugin is the HAMi plugin instance of the hami-scheduler profile.
	plugin atomic.Pointer[plugins.Plugin]
}

// registry is profile.Registry, keeping the plugin instance it builds.
func (s *Scheduler) registry(extra frameworkruntime.Registry) frameworkruntime.Registry {
	r := profile.Registry()
	r[plugins.Name] = func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		p, err := plugins.New(ctx, obj, h)
		if err == nil {
			s.plugin.Store(p.(*plugins.Plugin))
		}
		return p, err
	}
	maps.Copy(r, extra)
	return r
}

// Plugin is the running HAMi plugin, for tests that compare its device
// cache with the API.
func (s *Scheduler) Plugin() *plugins.Plugin { return s.plugin.Load() }

// StartScheduler builds the scheduler, starts its informers and waits until
// they and the plugins' event handlers have synced, then runs it. Stop it
// before the control plane.
func StartScheduler(ctx context.Context, cfg *rest.Config, opts SchedulerOptions) (*Scheduler, error) {
	if err := applyShippedFeatureGates(); err != nil {
		return nil, err
	}
	profiles, err := profile.Profiles(opts.Args, true)
	if err != nil {
		return nil, err
	}
	if opts.Profile != nil {
		for i := range profiles {
			opts.Profile(&profiles[i])
		}
	}
	c := rest.CopyConfig(cfg)
	c.UserAgent = "hami-scheduler"
	// The client is limited as the shipped configuration limits
	// hami-scheduler's (clientConnection), for both profiles.
	if c.QPS, c.Burst, err = profile.ClientLimits(); err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(c)
	if err != nil {
		return nil, fmt.Errorf("scheduler client: %w", err)
	}
	// Events go through a client of their own, with a rate limiter of its
	// own, as kube-scheduler's (cmd/kube-scheduler createClients).
	eventClient, err := kubernetes.NewForConfig(c)
	if err != nil {
		return nil, fmt.Errorf("scheduler event client: %w", err)
	}
	dynamicClient, err := dynamic.NewForConfig(c)
	if err != nil {
		return nil, fmt.Errorf("scheduler dynamic client: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Scheduler{
		cancel:    cancel,
		informers: scheduler.NewInformerFactory(client, 0, nil),
		dynamic:   dynamicinformer.NewDynamicSharedInformerFactory(dynamicClient, 0),
		events:    events.NewEventBroadcasterAdapterWithContext(ctx, eventClient),
		cardFit:   opts.CardFit,
	}
	recorders := func(name string) events.EventRecorderLogger { return s.events.NewRecorder(name) }
	s.Scheduler, err = scheduler.New(ctx, client, s.informers, s.dynamic, recorders,
		scheduler.WithKubeConfig(c),
		scheduler.WithProfiles(profiles...),
		scheduler.WithFrameworkOutOfTreeRegistry(s.registry(opts.Plugins)))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("create scheduler: %w", err)
	}
	s.events.StartRecordingToSink(ctx.Done())
	s.informers.Start(ctx.Done())
	s.dynamic.Start(ctx.Done())
	s.informers.WaitForCacheSync(ctx.Done())
	s.dynamic.WaitForCacheSync(ctx.Done())
	if err := s.WaitForHandlersSync(ctx); err != nil {
		s.Stop()
		return nil, fmt.Errorf("scheduler handlers did not sync: %w", err)
	}
	if opts.LeaderElection == nil {
		s.leading.Store(true)
		s.done.Go(func() { s.runCardFit(ctx) })
		s.done.Go(func() { s.Run(ctx) })
		return s, nil
	}
	elector, err := s.elector(client, opts.LeaderElection)
	if err != nil {
		s.Stop()
		return nil, err
	}
	s.done.Go(func() { elector.Run(ctx) })
	return s, nil
}

// elector runs the scheduler while this replica holds the lease.
func (s *Scheduler) elector(client kubernetes.Interface, le *LeaderElection) (*leaderelection.LeaderElector, error) {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: le.Namespace, Name: le.Name},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: le.Identity},
	}
	return leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   le.LeaseDuration,
		RenewDeadline:   le.RenewDeadline,
		RetryPeriod:     le.RetryPeriod,
		ReleaseOnCancel: false, // a killed replica does not hand over politely
		Name:            le.Identity,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				s.leading.Store(true)
				s.done.Go(func() { s.runCardFit(ctx) })
				s.Run(ctx)
			},
			OnStoppedLeading: func() { s.leading.Store(false) },
		},
	})
}

// runCardFit runs the admission check, if the options ask for it, until
// ctx ends.
func (s *Scheduler) runCardFit(ctx context.Context) {
	p := s.Plugin()
	if s.cardFit == nil || p == nil {
		return
	}
	c, err := cardfit.New(p.KubeConfig(), cardfit.FromPlugin(p), p.PodLister(), *s.cardFit)
	if err == nil {
		err = c.Run(ctx)
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "Kueue admission check stopped")
	}
}

// Leading reports whether the scheduler runs: always without leader
// election, while it holds the lease with it.
func (s *Scheduler) Leading() bool { return s.leading.Load() }

// Stop ends the scheduler, its informers and its event recording, and waits
// for them. Binding cycles in flight are cancelled, as when the process is
// killed.
func (s *Scheduler) Stop() {
	s.cancel()
	s.done.Wait()
	s.informers.Shutdown()
	s.dynamic.Shutdown()
	s.events.Shutdown()
}
