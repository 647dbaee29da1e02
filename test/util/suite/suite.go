// Package suite starts the in-process cluster an end-to-end suite's
// TestMain runs its tests on (internal/localcluster): the control plane,
// HAMi's node side (internal/localcluster/simnode), what the suite needs
// beside them and hami-scheduler, with their logs in a file of the
// suite's; it stops them, last started first, once the tests ran.
package suite

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

// Options are what a suite's cluster runs, in the order it starts them.
type Options struct {
	// Name names the log file (localcluster.RunLogged), e.g. "hami-e2e";
	// What says what it holds, printed with its path when a test fails.
	Name, What string
	// ControlPlane are the control plane's options; Log is the log file.
	ControlPlane localcluster.Options
	// Agent are the simulated nodes' options.
	Agent simnode.Options
	// Controllers runs the local cluster's controllers
	// (localcluster.StartControllers).
	Controllers bool
	// Webhook, when set, runs hami-webhook with these options.
	Webhook *localcluster.WebhookOptions
	// PodGroupCRD installs scheduler-plugins' PodGroup CRD, as the chart
	// does before hami-scheduler starts.
	PodGroupCRD bool
	// Kueue, when set, runs Kueue's controller-manager; its Log, when nil,
	// is the log file.
	Kueue *localcluster.KueueOptions
	// Scheduler are hami-scheduler's options.
	Scheduler localcluster.SchedulerOptions
}

// Vars are the suite's variables through which its tests reach the
// cluster; Run sets those that are not nil. When the tests are done, Run
// stops the scheduler *Scheduler holds then: a suite that restarts the
// scheduler stores the new one there.
type Vars struct {
	ControlPlane **localcluster.ControlPlane
	Agent        **simnode.Agent
	Scheduler    **localcluster.Scheduler
}

// Run starts the cluster, runs the tests with m and returns their exit
// code, 1 when the cluster did not start.
func Run(m *testing.M, opts Options, vars Vars) int {
	return RunLogged(opts.Name, opts.What, func(logFile *os.File) int {
		code, err := run(m, opts, vars, logFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return code
	})
}

// RunLogged runs run with klog writing to a log file of the suite's
// (localcluster.RunLogged) at the verbosity E2E_VERBOSITY asks for, 2 at
// the least.
func RunLogged(name, what string, run func(logFile *os.File) int) int {
	verbosity, _ := strconv.Atoi(os.Getenv("E2E_VERBOSITY"))
	return localcluster.RunLogged(name, max(verbosity, 2), what, run)
}

func run(m *testing.M, opts Options, vars Vars, logFile *os.File) (int, error) {
	ctx := context.Background()
	cpOptions := opts.ControlPlane
	cpOptions.Log = logFile
	cp, err := localcluster.Start(cpOptions)
	if err != nil {
		return 0, fmt.Errorf("start control plane: %w", err)
	}
	set(vars.ControlPlane, cp)
	defer cp.Stop()
	agent, err := simnode.NewAgent(cp.Config, opts.Agent)
	if err != nil {
		return 0, fmt.Errorf("node agent: %w", err)
	}
	if err := agent.Start(ctx); err != nil {
		return 0, fmt.Errorf("start node agent: %w", err)
	}
	set(vars.Agent, agent)
	defer agent.Stop()
	stop, err := startExtras(ctx, cp, opts, logFile)
	defer stop()
	if err != nil {
		return 0, err
	}
	sched, err := localcluster.StartScheduler(ctx, cp.Config, opts.Scheduler)
	if err != nil {
		return 0, fmt.Errorf("start scheduler: %w", err)
	}
	if vars.Scheduler == nil {
		vars.Scheduler = &sched
	}
	*vars.Scheduler = sched
	// The scheduler must stop before the apiserver, or the apiserver waits
	// for its watches; deferred calls run last first.
	defer func() { (*vars.Scheduler).Stop() }()
	return m.Run(), nil
}

// startExtras starts what opts asks for between the node side and the
// scheduler. stop stops what started, last first, also on an error.
func startExtras(ctx context.Context, cp *localcluster.ControlPlane, opts Options, logFile *os.File) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	if opts.Controllers {
		controllers, err := localcluster.StartControllers(ctx, cp.Config)
		if err != nil {
			return stop, fmt.Errorf("start controllers: %w", err)
		}
		stops = append(stops, controllers.Stop)
	}
	if opts.Webhook != nil {
		webhook, err := localcluster.StartWebhook(ctx, cp.Config, *opts.Webhook)
		if err != nil {
			return stop, fmt.Errorf("start webhook: %w", err)
		}
		stops = append(stops, webhook.Stop)
	}
	if opts.PodGroupCRD {
		if err := localcluster.InstallPodGroupCRD(ctx, cp.Config); err != nil {
			return stop, fmt.Errorf("install PodGroup CRD: %w", err)
		}
	}
	if opts.Kueue != nil {
		kueueOptions := *opts.Kueue
		if kueueOptions.Log == nil {
			kueueOptions.Log = logFile
		}
		kueue, err := cp.StartKueue(ctx, kueueOptions)
		if err != nil {
			return stop, fmt.Errorf("start Kueue: %w", err)
		}
		stops = append(stops, kueue.Stop)
	}
	return stop, nil
}

// set stores v in *p when p is not nil.
func set[T any](p *T, v T) {
	if p != nil {
		*p = v
	}
}
