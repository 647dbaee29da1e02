package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hamiv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
)

// Two scheduler replicas share a lease; the leader is killed in the middle
// of a burst; the other takes over and schedules the rest, and no card is
// over-committed.
func TestFailoverMidBurst(t *testing.T) {
	sched.Stop()
	t.Cleanup(func() { restartScheduler(t, nil) })
	e := newEnv(t, "failover")
	nodes := e.addNodes("4 nodes x 2 cards of NVIDIA A100 40 GiB, split 10", nil)

	// A replica killed between taking a node's lock and binding leaves the
	// lock to expire: a short expiry lets the test finish.
	args := &hamiv1.HAMiArgs{NodeLockExpiry: &metav1.Duration{Duration: 5 * time.Second}}
	replicas := map[string]*localcluster.Scheduler{}
	for _, id := range []string{"replica-a", "replica-b"} {
		s, err := localcluster.StartScheduler(context.Background(), controlPlane.Config, localcluster.SchedulerOptions{
			Args: args,
			LeaderElection: &localcluster.LeaderElection{Identity: id, Namespace: "default", Name: "hami-scheduler-failover-" + e.ns,
				LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 250 * time.Millisecond},
		})
		if err != nil {
			t.Fatal(err)
		}
		replicas[id] = s
		t.Cleanup(s.Stop)
	}
	leader := func() string {
		for id, s := range replicas {
			if s.Leading() {
				return id
			}
		}
		return ""
	}
	e.eventually("one replica leads", func() (bool, string) { return leader() != "", "no leader" })
	first := leader()

	const pods = 40
	for i := 0; i < pods; i++ {
		e.create(e.pod(fmt.Sprintf("p%02d", i), gpu{cards: 1, memory: 3000, cores: 10}))
	}
	e.eventually("a few pods bound by the first leader", func() (bool, string) {
		bound := countBound(e.pods())
		return bound >= 5, fmt.Sprintf("%d bound", bound)
	})
	replicas[first].Stop()
	delete(replicas, first)
	e.eventually("the other replica takes over", func() (bool, string) {
		return leader() != "", "no leader after " + first + " was killed"
	})
	e.eventually(fmt.Sprintf("all %d pods running", pods), func() (bool, string) {
		running := 0
		for _, p := range e.pods() {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == pods, fmt.Sprintf("%d running", running)
	})
	e.checkAccounting()
	for _, n := range nodes {
		e.checkNodeUnlocked(n.Name)
	}
}

// The leader is killed while members of a gang wait at Permit for the
// last one: nothing of the gang was written, so the new leader starts it
// over from scratch, binds none of it early, and places it whole once the
// last member can go.
func TestFailoverMidGang(t *testing.T) {
	sched.Stop()
	t.Cleanup(func() { restartScheduler(t, nil) })
	e := newEnv(t, "failover-gang")
	nodes := e.addNodes("1 node x 4 cards of NVIDIA A100 40 GiB, split 10", nil)
	replicas := map[string]*localcluster.Scheduler{}
	for _, id := range []string{"replica-a", "replica-b"} {
		s, err := localcluster.StartScheduler(context.Background(), controlPlane.Config, localcluster.SchedulerOptions{
			LeaderElection: &localcluster.LeaderElection{Identity: id, Namespace: "default", Name: "hami-scheduler-failover-" + e.ns,
				LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 250 * time.Millisecond},
		})
		if err != nil {
			t.Fatal(err)
		}
		replicas[id] = s
		t.Cleanup(s.Stop)
	}
	leader := func() string {
		for id, s := range replicas {
			if s.Leading() {
				return id
			}
		}
		return ""
	}
	e.eventually("one replica leads", func() (bool, string) { return leader() != "", "no leader" })
	first := leader()

	names := e.gangWaitingForALateMember("g", 120)
	e.waitReserved("g", 9)
	replicas[first].Stop()
	delete(replicas, first)
	e.eventually("the other replica takes over", func() (bool, string) {
		return leader() != "", "no leader after " + first + " was killed"
	})
	e.checkNoneBound(names)

	patchNode(t, e, nodes[0].Name, `{"metadata":{"labels":{"late":"yes"}}}`)
	e.waitAllRunning(names)
	e.checkAccounting()
	e.eventually("the gang's reservations cleared", func() (bool, string) {
		value, ok := e.getPodGroup("g").Annotations[devices.GangReservationsAnnotation]
		return !ok, value
	})
}
