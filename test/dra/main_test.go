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
	"os"
	"testing"

	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
	"github.com/hami-scheduler/hami-scheduler/test/util/suite"
)

var (
	controlPlane *localcluster.ControlPlane
	agent        *simnode.Agent
	sched        *localcluster.Scheduler
)

func TestMain(m *testing.M) {
	os.Exit(suite.Run(m, suite.Options{
		Name: "hami-dra",
		What: "control plane and scheduler logs",
		// The faithful node side; a node switched back to the device
		// plugin has its driver's slices wiped at once, not after the
		// kubelet's 30 s.
		Agent: simnode.Options{Workers: 8, DRAWipingDelay: -1},
		// The resource claim controller releases and deallocates the
		// claims of pods that are gone.
		Controllers: true,
		// scheduler-plugins' PodGroups, for gangs on DRA nodes.
		PodGroupCRD: true,
	}, suite.Vars{ControlPlane: &controlPlane, Agent: &agent, Scheduler: &sched}))
}
