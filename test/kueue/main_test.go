// Package kueue runs hami-scheduler's Kueue admission check
// (hami.io/card-fit, package cardfit) end to end against Kueue's real
// controller-manager (built from sigs.k8s.io/kueue's module by make
// bin/kueue, its CRDs and webhooks from the same module), on the
// in-process control plane with simulated GPU nodes, HAMi's webhook, the
// Job controller and hami-scheduler running the check.
package kueue

import (
	"os"
	"testing"
	"time"

	"github.com/hami-scheduler/hami-scheduler/cardfit"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
	"github.com/hami-scheduler/hami-scheduler/test/util/suite"
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
	os.Exit(suite.Run(m, suite.Options{
		Name:        "hami-kueue",
		What:        "control plane, scheduler and Kueue logs",
		Agent:       simnode.Options{Workers: 8},
		Controllers: true,
		Webhook:     &localcluster.WebhookOptions{},
		// The chart's PodGroup CRD, before the scheduler, as helm install
		// applies it; then Kueue, so that the check finds its API at once.
		PodGroupCRD: true,
		Kueue:       &localcluster.KueueOptions{},
		Scheduler:   localcluster.SchedulerOptions{CardFit: &checkOptions},
	}, suite.Vars{ControlPlane: &controlPlane, Scheduler: &sched}))
}
