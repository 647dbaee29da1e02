package e2e

import (
	"strings"
	"testing"
	"time"
)

// A pod pending for lack of card memory is scheduled within seconds of the
// pod holding that memory being deleted: the plugin's queueing hint requeues
// it instead of leaving it to the scheduler's periodic flush (minutes).
func TestPendingPodScheduledAfterDelete(t *testing.T) {
	e := newEnv(t, "requeue")
	e.addNodes("1 node x 1 card of Tesla T4 15 GiB, split 4", nil)
	e.create(e.pod("holder", gpu{cards: 1, memory: 12000}))
	e.waitRunning("holder")
	e.create(e.pod("waiter", gpu{cards: 1, memory: 8000}))
	if msg := e.waitUnschedulable("waiter"); !strings.Contains(msg, "insufficient memory") {
		t.Errorf("waiter's event %q does not mention memory", msg)
	}

	deleted := time.Now()
	e.deletePod("holder")
	e.waitRunning("waiter")
	if took := time.Since(deleted); took > 20*time.Second {
		t.Errorf("waiter ran %s after the holder was deleted, want within 20s", took)
	}
	e.checkAccounting()
}
