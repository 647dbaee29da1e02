// Package workload holds the end-to-end tests of Kubernetes' own gangs
// (the scheduling.k8s.io/v1beta1 PodGroup of 1.37, GenericWorkload on)
// placed by hami-scheduler: kube-scheduler's pod-group cycle and
// workload-aware preemption with the HAMi plugin's devices. Feature gates
// are process-wide, so these run in a process of their own, apart from
// test/e2e.
package workload

import (
	"os"
	"testing"

	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
	"github.com/hami-scheduler/hami-scheduler/test/util/suite"
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
	os.Exit(suite.Run(m, suite.Options{
		Name:         "hami-workload",
		What:         "control plane and scheduler logs",
		ControlPlane: localcluster.Options{FeatureGates: gates},
		Agent:        simnode.Options{Workers: 8},
	}, suite.Vars{ControlPlane: &controlPlane, Scheduler: &sched}))
}
