package simnode

import (
	"testing"
	"time"
)

func TestHandOverLog(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var h handOverLog
	h.allocating("n1", "ns", "first", t0)
	h.released("n1", t0.Add(time.Second))
	h.allocating("n1", "ns", "second", t0.Add(1200*time.Millisecond))
	h.allocating("n2", "ns", "other", t0.Add(2*time.Second))
	got := h.take()
	want := []HandOver{
		{Node: "n1", Namespace: "ns", Name: "first", AllocateStarted: t0},
		{Node: "n1", Namespace: "ns", Name: "second", Released: t0.Add(time.Second), AllocateStarted: t0.Add(1200 * time.Millisecond)},
		{Node: "n2", Namespace: "ns", Name: "other", AllocateStarted: t0.Add(2 * time.Second)},
	}
	if len(got) != len(want) {
		t.Fatalf("log %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("hand-over %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if again := h.take(); len(again) != 0 {
		t.Errorf("take kept %d entries", len(again))
	}
}
