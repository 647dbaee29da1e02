package e2e

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Pods share one card up to its split count and its memory; the next one
// stays Pending, and its FailedScheduling event says why. The split count
// is enforced twice: the node advertises nvidia.com/gpu = cards x split, so
// NodeResourcesFit turns the 11th pod away before HAMi sees it.
func TestCardSharingLimits(t *testing.T) {
	tests := []struct {
		name string
		// request is every pod's request; fit is how many of them the card
		// holds; the test creates fit+1.
		request     gpu
		fit         int
		wantReasons []string
	}{
		{name: "split-count", request: gpu{cards: 1, memory: 4000, cores: 10}, fit: 10,
			wantReasons: []string{"1 Insufficient nvidia.com/gpu"}},
		{name: "memory", request: gpu{cards: 1, memory: 10240}, fit: 4,
			wantReasons: []string{"1 insufficient NVIDIA devices: insufficient memory"}},
		{name: "cores", request: gpu{cards: 1, memory: 1000, cores: 40}, fit: 2,
			wantReasons: []string{"1 insufficient NVIDIA devices: insufficient cores"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, "sharing-"+tt.name)
			e.addNodes("1 node x 1 card of NVIDIA A100 40 GiB, split 10", nil)
			for i := range tt.fit + 1 {
				e.create(e.pod(fmt.Sprintf("p%d", i), tt.request))
			}
			var pending []string
			e.eventually(fmt.Sprintf("%d pods running, 1 pending", tt.fit), func() (bool, string) {
				running := 0
				pending = pending[:0]
				var states []string
				for _, p := range e.pods() {
					switch {
					case p.Status.Phase == corev1.PodRunning:
						running++
					case p.Spec.NodeName == "":
						pending = append(pending, p.Name)
					}
					states = append(states, describe(&p))
				}
				return running == tt.fit && len(pending) == 1, strings.Join(states, "; ")
			})
			message := e.waitUnschedulable(pending[0])
			for _, want := range tt.wantReasons {
				if !strings.Contains(message, want) {
					t.Errorf("FailedScheduling message %q does not say %q", message, want)
				}
			}
			cards := e.checkAccounting()
			if len(cards) != 1 || int(cards[0].Used.Sharers) != tt.fit {
				t.Errorf("card holds %+v, want %d sharers", cards, tt.fit)
			}
		})
	}
}
