package localcluster

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/transport"
	"k8s.io/kubernetes/pkg/scheduler"

	hamiv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
	"github.com/hami-scheduler/hami-scheduler/scheduler/profile"
)

// SchedulerOptions configure StartScheduler.
type SchedulerOptions struct {
	// Args configure the HAMi plugin; nil leaves its defaults.
	Args *hamiv1.HAMiArgs
	// WrapTransport, if set, wraps the scheduler's HTTP transport, e.g. to
	// count its API calls.
	WrapTransport transport.WrapperFunc
}

// Scheduler is kube-scheduler running in this process with two profiles:
// hami-scheduler (scheduler/profile) and default-scheduler, which stands in
// for the kube-scheduler a real cluster runs beside hami-scheduler.
type Scheduler struct {
	// Scheduler is the running scheduler.
	*scheduler.Scheduler

	cancel    context.CancelFunc
	done      sync.WaitGroup
	informers informers.SharedInformerFactory
	events    events.EventBroadcasterAdapter
}

// StartScheduler builds the scheduler, starts its informers and waits until
// they and the plugins' event handlers have synced, then runs it. Stop it
// before the control plane.
func StartScheduler(ctx context.Context, cfg *rest.Config, opts SchedulerOptions) (*Scheduler, error) {
	profiles, err := profile.Profiles(opts.Args, true)
	if err != nil {
		return nil, err
	}
	c := rest.CopyConfig(cfg)
	c.UserAgent = "hami-scheduler"
	if opts.WrapTransport != nil {
		c.Wrap(opts.WrapTransport)
	}
	client, err := kubernetes.NewForConfig(c)
	if err != nil {
		return nil, fmt.Errorf("scheduler client: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Scheduler{
		cancel:    cancel,
		informers: scheduler.NewInformerFactory(client, 0, nil),
		events:    events.NewEventBroadcasterAdapterWithContext(ctx, client),
	}
	recorders := func(name string) events.EventRecorderLogger { return s.events.NewRecorder(name) }
	s.Scheduler, err = scheduler.New(ctx, client, s.informers, nil, recorders,
		scheduler.WithKubeConfig(c),
		scheduler.WithProfiles(profiles...),
		scheduler.WithFrameworkOutOfTreeRegistry(profile.Registry()))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("create scheduler: %w", err)
	}
	s.events.StartRecordingToSink(ctx.Done())
	s.informers.Start(ctx.Done())
	s.informers.WaitForCacheSync(ctx.Done())
	if err := s.WaitForHandlersSync(ctx); err != nil {
		s.Stop()
		return nil, fmt.Errorf("scheduler handlers did not sync: %w", err)
	}
	s.done.Go(func() { s.Run(ctx) })
	return s, nil
}

// Stop ends the scheduler, its informers and its event recording, and waits
// for them. Binding cycles in flight are cancelled, as when the process is
// killed.
func (s *Scheduler) Stop() {
	s.cancel()
	s.done.Wait()
	s.informers.Shutdown()
	s.events.Shutdown()
}
