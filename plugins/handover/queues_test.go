package handover

import (
	"testing"
	"time"
)

// TestHandOverTimeMeasured: a node's time per pod is measured between the
// services of pods queued one behind the other, and averaged from
// DefaultTime; a pod served off an idle node measures nothing.
func TestHandOverTimeMeasured(t *testing.T) {
	var q Queues
	t0 := time.Unix(1000, 0)
	if _, perPod := q.Load("n"); perPod != DefaultTime {
		t.Fatalf("unmeasured node: %s, want %s", perPod, DefaultTime)
	}
	q.Add("a", "n", t0)
	q.Add("b", "n", t0)
	q.Served("a", t0.Add(300*time.Millisecond)) // the first: nothing measured
	if n, perPod := q.Load("n"); n != 1 || perPod != DefaultTime {
		t.Fatalf("after a: %d queued, %s per pod; want 1, %s", n, perPod, DefaultTime)
	}
	q.Served("b", t0.Add(2300*time.Millisecond)) // 2 s after a
	if _, perPod := q.Load("n"); perPod != 1700*time.Millisecond {
		t.Errorf("after b: %s per pod, want 1.7s (1.6s + (2s-1.6s)/4)", perPod)
	}
	q.Add("c", "n", t0.Add(10*time.Second)) // queued on an idle node
	q.Served("c", t0.Add(10500*time.Millisecond))
	if _, perPod := q.Load("n"); perPod != 1700*time.Millisecond {
		t.Errorf("after c: %s per pod, want 1.7s still", perPod)
	}
	q.Served("never-queued", t0)
	if n, _ := q.Load("n"); n != 0 {
		t.Errorf("%d queued, want 0", n)
	}
}

func TestNodeQueuesCountEachPodOnce(t *testing.T) {
	var q Queues
	now := time.Now()
	q.Add("a", "n1", now)
	q.Add("b", "n1", now)
	q.Add("a", "n2", now) // a re-reserved elsewhere
	q.Remove("c")         // never queued
	if q.Len("n1") != 1 || q.Len("n2") != 1 {
		t.Errorf("n1 %d, n2 %d; want 1 and 1", q.Len("n1"), q.Len("n2"))
	}
	q.Remove("a")
	q.Remove("a")
	q.Remove("b")
	if q.Len("n1") != 0 || q.Len("n2") != 0 || len(q.queued) != 0 {
		t.Errorf("pods %v left queued after every pod left", q.queued)
	}
}
