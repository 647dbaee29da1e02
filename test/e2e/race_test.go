package e2e

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Two pods created at the same moment for the last slot of a node: exactly
// one gets it, the other stays Pending.
func TestRaceForLastSlot(t *testing.T) {
	tests := []struct {
		name   string
		spec   string
		filler []gpu
		racer  gpu
	}{
		// One card, 3 shares, 2 taken: one share left.
		{name: "shares", spec: "1 node x 1 card of NVIDIA A100 40 GiB, split 3",
			filler: []gpu{{cards: 1, memory: 1000}, {cards: 1, memory: 1000}}, racer: gpu{cards: 1, memory: 1000}},
		// One card, 40 GiB, 30 GiB taken: room for one 8 GiB racer.
		{name: "memory", spec: "1 node x 1 card of NVIDIA A100 40 GiB, split 10",
			filler: []gpu{{cards: 1, memory: 30720}}, racer: gpu{cards: 1, memory: 8192}},
		// Two cards, one busy: one exclusive racer fits on the idle card.
		{name: "exclusive", spec: "1 node x 2 cards of NVIDIA A100 40 GiB, split 10",
			filler: []gpu{{cards: 1, memory: 1000, cores: 100}}, racer: gpu{cards: 1, cores: 100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, "race-"+tt.name)
			e.addNodes(tt.spec, nil)
			for i, f := range tt.filler {
				name := fmt.Sprintf("filler-%d", i)
				e.create(e.pod(name, f))
				e.waitRunning(name)
			}
			racers := []*corev1.Pod{e.pod("racer-a", tt.racer), e.pod("racer-b", tt.racer)}
			var wg sync.WaitGroup
			for _, p := range racers {
				wg.Go(func() { e.create(p) })
			}
			wg.Wait()

			var winner, loser string
			e.eventually("one racer running, the other refused", func() (bool, string) {
				a, b := e.get("racer-a"), e.get("racer-b")
				switch {
				case a.Status.Phase == corev1.PodRunning && b.Spec.NodeName == "":
					winner, loser = a.Name, b.Name
				case b.Status.Phase == corev1.PodRunning && a.Spec.NodeName == "":
					winner, loser = b.Name, a.Name
				default:
					return false, describe(a) + "; " + describe(b)
				}
				return true, ""
			})
			if msg := e.waitUnschedulable(loser); !strings.Contains(msg, "Insufficient") && !strings.Contains(msg, "insufficient") && !strings.Contains(msg, "exclusive") {
				t.Errorf("loser %s: event %q gives no device reason", loser, msg)
			}
			if p := e.get(loser); p.Spec.NodeName != "" {
				t.Errorf("loser %s is bound to %s next to winner %s", loser, p.Spec.NodeName, winner)
			}
			e.checkAccounting()
		})
	}
}
