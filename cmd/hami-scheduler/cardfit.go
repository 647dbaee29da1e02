package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/cardfit"
	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
	"github.com/hami-scheduler/hami-scheduler/plugins"
)

// The flags of Kueue's admission check hami.io/card-fit (package cardfit).
const (
	cardFitFlag        = "hami-kueue-card-fit"
	cardFitPromiseFlag = "hami-kueue-card-fit-promise-timeout"
	cardFitRetryFlag   = "hami-kueue-card-fit-retry"
)

// cardFitLeaderPoll is how often a standby looks whether it leads.
const cardFitLeaderPoll = 2 * time.Second

// firstPlugin keeps the HAMi plugin of the first profile built, whose
// device cache the admission check reads.
var firstPlugin atomic.Pointer[plugins.Plugin]

// newPlugin is plugins.New, keeping the first instance it builds.
func newPlugin(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	p, err := plugins.New(ctx, obj, h)
	if err == nil {
		firstPlugin.CompareAndSwap(nil, p.(*plugins.Plugin))
	}
	return p, err
}

// withCardFit adds the admission check's flags and, when it is switched on,
// runs it beside the scheduler: on the leader only (kube-scheduler's leader
// election; a process that loses its lease exits, so it never stops
// leading while it runs), on the HAMi plugin's device cache.
func withCardFit(cmd *cobra.Command) *cobra.Command {
	fs := pflag.NewFlagSet("HAMi", pflag.ContinueOnError)
	enabled := fs.Bool(cardFitFlag, false, "Answer Kueue's admission checks of controllerName "+cardfit.ControllerName+" (AdmissionCheck objects): a workload is Ready once every pod of it fits on the cards free now, less what the workloads passed before still need, and Retry otherwise. Runs on the leader only.")
	promise := fs.Duration(cardFitPromiseFlag, cardfit.DefaultPromiseTimeout, "How long the cards of a workload the check passed are kept for its pods that are not placed yet.")
	retry := fs.Duration(cardFitRetryFlag, cardfit.DefaultRetryBase, "How long Kueue waits before it tries again a workload the check sent back (doubled per retry, at most 12 times as long).")
	cmd.Flags().AddFlagSet(fs)
	help := cmd.HelpFunc()
	cmd.SetHelpFunc(func(c *cobra.Command, args []string) {
		// Below the HAMi flags withMetricsListener's help prints.
		help(c, args)
		fmt.Fprint(c.OutOrStdout(), fs.FlagUsages())
	})
	preRunE := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		if preRunE != nil {
			if err := preRunE(c, args); err != nil {
				return err
			}
		}
		if !*enabled {
			return nil
		}
		leaderElects, err := leaderElection(c)
		if err != nil {
			return err
		}
		opts := cardfit.Options{PromiseTimeout: *promise, RetryBase: *retry, RetryMax: 12 * *retry}
		go runCardFit(context.Background(), leaderElects, opts)
		return nil
	}
	return cmd
}

// runCardFit waits for the HAMi plugin and for this process to lead, then
// runs the admission check for the rest of the process.
func runCardFit(ctx context.Context, leaderElects bool, opts cardfit.Options) {
	logger := klog.FromContext(ctx).WithName("card-fit")
	var p *plugins.Plugin
	err := pollUntil(ctx, func() bool {
		p = firstPlugin.Load()
		return p != nil && (!leaderElects || leadingNow())
	})
	if err != nil {
		return
	}
	c, err := cardfit.New(p.KubeConfig(), cardfit.FromPlugin(p), p.PodLister(), opts)
	if err != nil {
		logger.Error(err, "Kueue admission check not started")
		return
	}
	if err := c.Run(ctx); err != nil {
		logger.Error(err, "Kueue admission check stopped")
	}
}

// leadingNow reports whether kube-scheduler's leader-election gauge says
// this process holds its lease (as the metrics handler reads it).
func leadingNow() bool {
	families, err := legacyregistry.DefaultGatherer.Gather()
	return err == nil && leading(families)
}

func pollUntil(ctx context.Context, cond func() bool) error {
	t := time.NewTicker(cardFitLeaderPoll)
	defer t.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}
