package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/hami-scheduler/hami-scheduler/apis/scheduling/v1alpha1"
)

// A PodGroup whose members' devices cannot all fit places none of them and
// holds no card: a plain pod asking the same runs at once; a group that
// fits runs, each member on its own card. (Two nodes of one 40 GiB card;
// members ask 30,000 MiB.)
func TestGangAllOrNothing(t *testing.T) {
	e := newEnv(t, "gang-all-or-nothing")
	e.addNodes("2 nodes x 1 card of NVIDIA A100 40 GiB", nil)
	big := gpu{cards: 1, memory: 30000}

	e.createPodGroup("three", 3, 0)
	three := e.createGang("three", 3, big)
	e.eventually("the group of three told why it waits", func() (bool, string) {
		events := e.podGroupEvents("three")
		for _, ev := range events {
			if strings.HasPrefix(ev, "GangUnschedulable: ") && strings.Contains(ev, "3 members need 3 card shares of 30000 MiB") {
				return true, ""
			}
		}
		return false, strings.Join(events, "; ")
	})
	message := e.waitUnschedulable(three[0])
	if !strings.Contains(message, "cannot place its members' devices together") {
		t.Errorf("FailedScheduling message %q does not say the group's devices do not fit", message)
	}
	e.checkNoneBound(three)
	e.checkNothingHeld(three)

	start := time.Now()
	e.create(e.pod("plain", big))
	e.waitRunning("plain")
	if took := time.Since(start); took > time.Minute {
		t.Errorf("the plain pod ran after %s, want within a minute", took)
	}
	e.checkNoneBound(three)
	e.deletePod("plain")
	e.waitGone("plain")

	e.createPodGroup("two", 2, 0)
	two := e.createGang("two", 2, big)
	e.waitAllRunning(two)
	nodes := map[string]bool{}
	for _, n := range two {
		nodes[e.get(n).Spec.NodeName] = true
	}
	if len(nodes) != 2 {
		t.Errorf("the group of two is on %d nodes, want one card each on two", len(nodes))
	}
	e.checkNoneBound(three)
	e.checkAccounting()
	e.eventually("PodGroup two Running", func() (bool, string) {
		pg := e.getPodGroup("two")
		return pg.Status.Phase == v1alpha1.PodGroupRunning && pg.Status.Running == 2, string(pg.Status.Phase)
	})
	if pg := e.getPodGroup("three"); pg.Status.Phase != v1alpha1.PodGroupScheduling {
		t.Errorf("PodGroup three is %q, want Scheduling", pg.Status.Phase)
	}
}
