// Package kueue runs hami-scheduler's Kueue admission check
// (hami.io/card-fit, package cardfit) end to end against Kueue's real
// controller-manager (built from sigs.k8s.io/kueue's module by make
// bin/kueue, its CRDs and webhooks from the same module), on the
// in-process control plane with simulated GPU nodes, HAMi's webhook, the
// Job controller and hami-scheduler running the check.
package kueue

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hami-scheduler/hami-scheduler/cardfit"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

var (
	controlPlane *localcluster.ControlPlane
	sched        *localcluster.Scheduler
	// skipped says why the suite cannot run (no Kueue binary).
	skipped string
)

// checkOptions are the check's options in these tests: Kueue tries a
// workload sent back again after a second (the shipped default is 5 s).
var checkOptions = cardfit.Options{PromiseTimeout: time.Minute, RetryBase: time.Second, RetryMax: 2 * time.Second}

func TestMain(m *testing.M) {
	if os.Getenv(localcluster.KueueBinaryEnv) == "" {
		skipped = "no Kueue binary: make test builds it (make bin/kueue) and sets " + localcluster.KueueBinaryEnv
		os.Exit(m.Run())
	}
	os.Exit(localcluster.RunLogged("hami-kueue", 2, "control plane, scheduler and Kueue logs", func(logFile *os.File) int {
		code, err := run(m, logFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return code
	}))
}

func run(m *testing.M, logFile *os.File) (int, error) {
	ctx := context.Background()
	cp, err := localcluster.Start(localcluster.Options{Log: logFile})
	if err != nil {
		return 0, fmt.Errorf("start control plane: %w", err)
	}
	controlPlane = cp
	defer cp.Stop()
	agent, err := simnode.NewAgent(cp.Config, simnode.Options{Workers: 8})
	if err != nil {
		return 0, err
	}
	if err := agent.Start(ctx); err != nil {
		return 0, err
	}
	defer agent.Stop()
	controllers, err := localcluster.StartControllers(ctx, cp.Config)
	if err != nil {
		return 0, err
	}
	defer controllers.Stop()
	webhook, err := localcluster.StartWebhook(ctx, cp.Config, localcluster.WebhookOptions{})
	if err != nil {
		return 0, err
	}
	defer webhook.Stop()
	// The chart's PodGroup CRD, before the scheduler, as helm install
	// applies it.
	if err := localcluster.InstallPodGroupCRD(ctx, cp.Config); err != nil {
		return 0, err
	}
	// Kueue first: the check finds its API at once.
	kueue, err := cp.StartKueue(ctx, localcluster.KueueOptions{Log: logFile})
	if err != nil {
		return 0, err
	}
	defer kueue.Stop()
	sched, err = localcluster.StartScheduler(ctx, cp.Config, localcluster.SchedulerOptions{CardFit: &checkOptions})
	if err != nil {
		return 0, err
	}
	defer func() { sched.Stop() }()
	return m.Run(), nil
}
