package perf

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/internal/simnode"
)

func TestWaitedHandOvers(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	all := []simnode.HandOver{
		// waited: handed at 0, released at 1000, Allocate at 1150.
		{Node: "n1", Namespace: "ns", Name: "a", Released: at(1000), AllocateStarted: at(1150)},
		// handed after the release: the node was idle, not a hand-over.
		{Node: "n1", Namespace: "ns", Name: "b", Released: at(1000), AllocateStarted: at(3000)},
		// the node's first pod: no release before it.
		{Node: "n2", Namespace: "ns", Name: "c", AllocateStarted: at(500)},
		// another phase's pod.
		{Node: "n1", Namespace: "other", Name: "a", Released: at(1000), AllocateStarted: at(1100)},
		// never seen handed over.
		{Node: "n3", Namespace: "ns", Name: "d", Released: at(1000), AllocateStarted: at(1200)},
	}
	handed := map[string]time.Time{"a": at(0), "b": at(2000), "c": at(0)}
	got := waitedHandOvers(all, "ns", handed)
	if len(got) != 1 || got[0] != 150*time.Millisecond {
		t.Errorf("hand-overs %v, want [150ms]", got)
	}
}

func TestParseSetting(t *testing.T) {
	tests := []struct {
		in      string
		want    Setting
		wantErr bool
	}{
		{in: "binpack", want: Setting{Policy: devices.NodeBinpack}},
		{in: " spread ", want: Setting{Policy: devices.NodeSpread}},
		{in: "binpack/q2", want: Setting{Policy: devices.NodeBinpack, QueueLimit: 2, SetQueueLimit: true}},
		{in: "binpack/q0", want: Setting{Policy: devices.NodeBinpack, SetQueueLimit: true}},
		{in: "binpack/q-1", wantErr: true},
		{in: "binpack/qx", wantErr: true},
		{in: "fastest", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseSetting(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseSetting(%q) = %v, %v; want %v (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err == nil && got.String() != strings.TrimSpace(tt.in) {
			t.Errorf("String() = %q, want %q", got.String(), strings.TrimSpace(tt.in))
		}
	}
}

func TestBusiestNode(t *testing.T) {
	pod := func(node string) corev1.Pod { return corev1.Pod{Spec: corev1.PodSpec{NodeName: node}} }
	if got := busiestNode([]corev1.Pod{pod("a"), pod("b"), pod("a"), pod(""), pod("")}); got != 2 {
		t.Errorf("busiest node holds %d pods, want 2 (unbound pods count for none)", got)
	}
}
