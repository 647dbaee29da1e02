package e2e

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

// A node whose device plugin stopped answering (kubelet then reports 0
// allocatable cards, HAMi's health signal) takes no new device pods until
// it serves again; its stale inventory annotation is not used.
func TestNodeWithDeadDevicePluginTakesNoPods(t *testing.T) {
	e := newEnv(t, "health")
	nodes := e.addNodes("2 nodes x 1 card of NVIDIA A100 40 GiB, split 10", nil)
	dead, alive := nodes[0].Name, nodes[1].Name
	setAllocatable := func(node string, cards int) {
		t.Helper()
		patch := fmt.Sprintf(`{"status":{"allocatable":{%q:"%d"}}}`, nvidia.DefaultCountName, cards)
		if _, err := controlPlane.Client.CoreV1().Nodes().Patch(e.ctx, node, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
	}
	setAllocatable(dead, 0)
	for i := 0; i < 4; i++ {
		name := fmt.Sprintf("p%d", i)
		e.create(e.pod(name, gpu{cards: 1, memory: 2000, cores: 10}))
		if got := e.waitRunning(name).Spec.NodeName; got != alive {
			t.Errorf("pod %s ran on %s, want %s: %s's device plugin is not serving", name, got, alive, dead)
		}
	}
	// Only the dead node could hold a whole-card pod now: it waits, with
	// the reason in its event.
	e.create(e.pod("whole", gpu{cards: 1, memory: 40960}))
	// kube-scheduler's NodeResourcesFit sees the 0 allocatable first; the
	// HAMi plugin refuses the node for the same reason ("not serving").
	if msg := e.waitUnschedulable("whole"); !strings.Contains(msg, "Insufficient "+nvidia.DefaultCountName) && !strings.Contains(msg, "not serving") {
		t.Errorf("FailedScheduling %q, want the dead device plugin's node refused for its 0 allocatable cards", msg)
	}
	setAllocatable(dead, 10)
	if got := e.waitRunning("whole").Spec.NodeName; got != dead {
		t.Errorf("whole-card pod ran on %s, want %s once its device plugin serves again", got, dead)
	}
}
