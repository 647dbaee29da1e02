// Package workload holds the end-to-end tests of Kubernetes' own gangs
// (the scheduling.k8s.io/v1beta1 PodGroup of 1.37, GenericWorkload on)
// placed by hami-scheduler: kube-scheduler's pod-group cycle and
// workload-aware preemption with the HAMi plugin's devices. Feature gates
// are process-wide, so these run in a process of their own, apart from
// test/e2e.
package workload

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

// gates are the API server's and the scheduler's: the chart's
// gangs.inTree turns GenericWorkload on in hami-scheduler, the cluster's
// administrator in the API server.
const gates = "GenericWorkload=true"

var (
	controlPlane *localcluster.ControlPlane
	sched        *localcluster.Scheduler
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	verbosity, _ := strconv.Atoi(os.Getenv("E2E_VERBOSITY"))
	return localcluster.RunLogged("hami-workload", max(verbosity, 2), "control plane and scheduler logs", func(logFile *os.File) int {
		ctx := context.Background()
		cp, err := localcluster.Start(localcluster.Options{Log: logFile, FeatureGates: gates})
		if err != nil {
			fmt.Fprintln(os.Stderr, "start control plane:", err)
			return 1
		}
		controlPlane = cp
		defer cp.Stop()
		agent, err := simnode.NewAgent(cp.Config, simnode.Options{Workers: 8})
		if err != nil {
			fmt.Fprintln(os.Stderr, "node agent:", err)
			return 1
		}
		if err := agent.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "start node agent:", err)
			return 1
		}
		defer agent.Stop()
		sched, err = localcluster.StartScheduler(ctx, cp.Config, localcluster.SchedulerOptions{})
		if err != nil {
			fmt.Fprintln(os.Stderr, "start scheduler:", err)
			return 1
		}
		defer sched.Stop()
		return m.Run()
	})
}
