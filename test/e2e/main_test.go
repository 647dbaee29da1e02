// Package e2e runs hami-scheduler end to end: a real kube-apiserver and
// etcd in this process (internal/localcluster, started by test/util/suite),
// simulated GPU nodes and their device plugin and kubelet
// (internal/localcluster/simnode), and kube-scheduler with the
// hami-scheduler and default-scheduler profiles. One control plane serves
// every test; each test has its own namespace and its own nodes, and its
// pods select those nodes.
package e2e

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
	// sched is the running scheduler; restartScheduler replaces it.
	sched *localcluster.Scheduler
)

func TestMain(m *testing.M) {
	os.Exit(suite.Run(m, suite.Options{
		Name: "hami-e2e",
		What: "control plane and scheduler logs",
		// The faithful node side: each node's device plugin has HAMi's
		// client limits and its kubelet the admission delay, so that the
		// tests see the node lock held as long as in a cluster.
		Agent: simnode.Options{Workers: 16},
		// The chart installs scheduler-plugins' PodGroup CRD before
		// hami-scheduler starts (gangs.coscheduling.installCRD).
		PodGroupCRD: true,
	}, suite.Vars{ControlPlane: &controlPlane, Agent: &agent, Scheduler: &sched}))
}
