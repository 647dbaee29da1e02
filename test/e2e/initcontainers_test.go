package e2e

import (
	"testing"

	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

// An init container and a main container that each want a whole card fit
// on a one-card node, as in HAMi: init containers run before the regular
// ones, so the card holds the larger of the two, not their sum.
func TestInitContainersShareACard(t *testing.T) {
	e := newEnv(t, "init")
	node := e.addNodes("1 node x 1 card of NVIDIA A100 40 GiB, split 10", nil)[0].Name
	card := simnode.CardUUID(node, 0)
	pod := e.pod("whole", gpu{name: "train", cards: 1, memory: 40960})
	pod.Spec.InitContainers = e.pod("", gpu{name: "prepare", cards: 1, memory: 40960}).Spec.Containers
	e.create(pod)
	got := e.waitRunning("whole")
	want := card + ",NVIDIA,40960,0:;" + card + ",NVIDIA,40960,0:;"
	if a := got.Annotations[nvidia.AllocatedAnnotation]; a != want {
		t.Errorf("%s = %q, want %q", nvidia.AllocatedAnnotation, a, want)
	}
	// The card is full: a second pod waits.
	e.create(e.pod("more", gpu{cards: 1, memory: 1000}))
	e.waitUnschedulable("more")
	e.checkAccounting()
}
