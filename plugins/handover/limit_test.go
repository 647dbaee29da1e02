package handover

import (
	"math"
	"testing"
	"time"
)

// TestBurstAllowance: a pod of the scheduler's latest burst (seen no later
// than its last pod) keeps the burst's size while fewer wait; a pod seen
// after it, or not seen at all, has its own size, which becomes the latest
// burst; schedulers are apart.
func TestBurstAllowance(t *testing.T) {
	type step struct {
		scheduler string
		size      float64
		seq, last uint64
		want      float64
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "a burst's pods keep its size as it is placed", steps: []step{
			{"s", 100, 1, 100, 100},
			{"s", 51, 50, 100, 100},
			{"s", 1, 100, 100, 100},
		}},
		{name: "a pod seen after the burst has its own size", steps: []step{
			{"s", 100, 1, 100, 100},
			{"s", 1, 101, 101, 1},
			{"s", 1, 100, 101, 1},
		}},
		{name: "a burst that grows while it is placed", steps: []step{
			{"s", 4, 1, 4, 4},
			{"s", 11, 2, 14, 11},
			{"s", 2, 14, 14, 11},
		}},
		{name: "a pod not seen yet has its own size", steps: []step{
			{"s", 100, 1, 100, 100},
			{"s", 6, 0, 100, 6},
		}},
		{name: "steady arrivals: bursts of one", steps: []step{
			{"s", 1, 1, 1, 1},
			{"s", 1, 2, 2, 1},
			{"s", 2, 3, 4, 2},
			{"s", 1, 5, 5, 1},
		}},
		{name: "schedulers are apart", steps: []step{
			{"s", 100, 1, 100, 100},
			{"other", 1, 50, 100, 1},
			{"s", 1, 60, 100, 100},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b Bursts
			for i, st := range tt.steps {
				if got := b.Allowance(st.scheduler, st.size, Arrivals{seq: st.seq, last: st.last}); got != st.want {
					t.Errorf("step %d: allowance %v, want %v", i, got, st.want)
				}
			}
		})
	}
}

// TestBurstSize: the pods waiting, the pod included, beyond what the
// scheduler's arrival rate brings in one hand-over; at least the pod.
func TestBurstSize(t *testing.T) {
	tests := []struct {
		name      string
		behind    int
		perSecond float64
		perPod    time.Duration
		want      float64
	}{
		{name: "alone", want: 1},
		{name: "a backlog on an idle scheduler", behind: 99, perPod: DefaultTime, want: 100},
		{name: "a steady stream the scheduler keeps up with", behind: 0, perSecond: 30, perPod: DefaultTime, want: 1},
		{name: "a stream the scheduler lags behind by less than a hand-over", behind: 40, perSecond: 30, perPod: DefaultTime, want: 1},
		{name: "a burst on top of a stream", behind: 147, perSecond: 30, perPod: DefaultTime, want: 100},
		{name: "slower hand-overs take more of a stream", behind: 147, perSecond: 30, perPod: 3 * time.Second, want: 58},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := BurstSize(Arrivals{behind: tt.behind, perSecond: tt.perSecond}, tt.perPod); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("BurstSize = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestQueueLimit(t *testing.T) {
	tests := []struct {
		name   string
		bounds Bounds
		perPod time.Duration
		burst  float64
		want   float64
	}{
		{name: "count alone", bounds: Bounds{Count: 20}, perPod: time.Second, burst: 100, want: 20},
		{name: "no limit", want: 0},
		{name: "count alone ignores the burst bound", bounds: Bounds{Count: 20, BurstWait: 2 * time.Second}, burst: 100, want: 20},
		{name: "wait over the default time per pod, and the pod served", bounds: Bounds{Wait: 6 * time.Second}, want: 4.25},
		{name: "wait over a measured time per pod", bounds: Bounds{Wait: 6 * time.Second}, perPod: 500 * time.Millisecond, want: 12.5},
		{name: "a slow node serving one pod still takes the next", bounds: Bounds{Wait: 2 * time.Second}, perPod: 3200 * time.Millisecond, want: 1.125},
		{name: "a few waiting: the wait rules", bounds: Bounds{Wait: 6 * time.Second}, perPod: 2 * time.Second, burst: 2, want: 3.5},
		{name: "a burst: its size, whatever it is", bounds: Bounds{Wait: 6 * time.Second}, perPod: 2 * time.Second, burst: 500, want: 500},
		{name: "a burst capped by the count", bounds: Bounds{Wait: 6 * time.Second, Count: 20}, perPod: 2 * time.Second, burst: 500, want: 20},
		{name: "a burst below the count", bounds: Bounds{Wait: 6 * time.Second, Count: 20}, perPod: 2 * time.Second, burst: 12, want: 12},
		{name: "a burst bounded in time", bounds: Bounds{Wait: 2 * time.Second, BurstWait: 10 * time.Second}, perPod: 2 * time.Second, burst: 500, want: 5},
		{name: "burst bound over the default time per pod", bounds: Bounds{Wait: 2 * time.Second, BurstWait: 8 * time.Second}, burst: 500, want: 5},
		{name: "a burst smaller than its time bound", bounds: Bounds{Wait: 2 * time.Second, BurstWait: 10 * time.Second}, perPod: 2 * time.Second, burst: 3, want: 3},
		{name: "burst bound below the wait: the wait", bounds: Bounds{Wait: 6 * time.Second, BurstWait: 2 * time.Second}, perPod: 2 * time.Second, burst: 500, want: 3.5},
		{name: "time and count bounds: the smaller", bounds: Bounds{Wait: 2 * time.Second, BurstWait: 20 * time.Second, Count: 4}, perPod: 2 * time.Second, burst: 500, want: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.bounds.Limit(tt.perPod, tt.burst); got != tt.want {
				t.Errorf("Limit = %v, want %v", got, tt.want)
			}
		})
	}
}
