// Package dra holds the end-to-end tests of the local cluster's DRA nodes:
// node groups running a DRA driver instead of HAMi's device plugin beside
// device-plugin ones, the drivers' ResourceSlices and DeviceClasses, the
// simulated kubelet's DRA manager, kube-scheduler's DynamicResources
// allocating native claims and HAMi-DRA's webhook's, and a node switched
// from one kind to the other. DeviceClasses are cluster-wide (and one of
// them, NVIDIA's, changes how every pod asking nvidia.com/gpu is
// scheduled), so these run in a process of their own, apart from
// test/e2e.
package dra

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
	sched        *localcluster.Scheduler
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	verbosity, _ := strconv.Atoi(os.Getenv("E2E_VERBOSITY"))
	return localcluster.RunLogged("hami-dra", max(verbosity, 2), "control plane and scheduler logs", func(logFile *os.File) int {
		ctx := context.Background()
		cp, err := localcluster.Start(localcluster.Options{Log: logFile})
		if err != nil {
			fmt.Fprintln(os.Stderr, "start control plane:", err)
			return 1
		}
		controlPlane = cp
		defer cp.Stop()
		// The faithful node side; a node switched back to the device
		// plugin has its driver's slices wiped at once, not after the
		// kubelet's 30 s.
		agent, err = simnode.NewAgent(cp.Config, simnode.Options{Workers: 8, DRAWipingDelay: -1})
		if err != nil {
			fmt.Fprintln(os.Stderr, "node agent:", err)
			return 1
		}
		if err := agent.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "start node agent:", err)
			return 1
		}
		defer agent.Stop()
		// The resource claim controller releases and deallocates the
		// claims of pods that are gone.
		controllers, err := localcluster.StartControllers(ctx, cp.Config)
		if err != nil {
			fmt.Fprintln(os.Stderr, "start controllers:", err)
			return 1
		}
		defer controllers.Stop()
		// scheduler-plugins' PodGroups, for gangs on DRA nodes.
		if err := localcluster.InstallPodGroupCRD(ctx, cp.Config); err != nil {
			fmt.Fprintln(os.Stderr, "install PodGroup CRD:", err)
			return 1
		}
		sched, err = localcluster.StartScheduler(ctx, cp.Config, localcluster.SchedulerOptions{})
		if err != nil {
			fmt.Fprintln(os.Stderr, "start scheduler:", err)
			return 1
		}
		defer sched.Stop()
		return m.Run()
	})
}
