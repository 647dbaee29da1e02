// Package e2e runs hami-scheduler end to end: a real kube-apiserver and
// etcd in this process (test/cluster), simulated GPU nodes and their device
// plugin and kubelet (test/gpunode), and kube-scheduler with the
// hami-scheduler and default-scheduler profiles. One control plane serves
// every test; each test has its own namespace and its own nodes, and its
// pods select those nodes.
package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

var (
	controlPlane *localcluster.ControlPlane
	agent        *simnode.Agent
	// sched is the running scheduler; restartScheduler replaces it.
	sched *localcluster.Scheduler
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	verbosity, _ := strconv.Atoi(os.Getenv("E2E_VERBOSITY"))
	return localcluster.RunLogged("hami-e2e", max(verbosity, 2), "control plane and scheduler logs", func(logFile *os.File) int {
		return runWithCluster(m, logFile)
	})
}

func runWithCluster(m *testing.M, logFile *os.File) int {
	ctx := context.Background()
	cp, err := localcluster.Start(localcluster.Options{Log: logFile})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start control plane:", err)
		return 1
	}
	controlPlane = cp
	defer cp.Stop()

	// The faithful node side: each node's device plugin has HAMi's client
	// limits and its kubelet the admission delay, so that the tests see
	// the node lock held as long as in a cluster.
	agent, err = simnode.NewAgent(cp.Config, simnode.Options{Workers: 16})
	if err != nil {
		fmt.Fprintln(os.Stderr, "node agent:", err)
		return 1
	}
	if err := agent.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "start node agent:", err)
		return 1
	}
	defer agent.Stop()

	// The chart installs scheduler-plugins' PodGroup CRD before
	// hami-scheduler starts (gangs.coscheduling.installCRD).
	if err := localcluster.InstallPodGroupCRD(ctx, cp.Config); err != nil {
		fmt.Fprintln(os.Stderr, "install PodGroup CRD:", err)
		return 1
	}
	sched, err = localcluster.StartScheduler(ctx, cp.Config, localcluster.SchedulerOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start scheduler:", err)
		return 1
	}
	// The scheduler must stop before the apiserver, or the apiserver waits
	// for its watches; deferred calls run last first.
	defer func() { sched.Stop() }()
	return m.Run()
}
