package dra

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/dra"
	"github.com/hami-scheduler/hami-scheduler/internal/allocation"
	"github.com/hami-scheduler/hami-scheduler/internal/clustervendors"
	"github.com/hami-scheduler/hami-scheduler/scheduler/profile"
)

// readAllocation reads the test's nodes, the namespace's pods and claims
// and every ResourceSlice through internal/allocation, as kubectl hami
// top and hami-local status read a cluster.
func (c *cluster) readAllocation() allocation.Report {
	c.t.Helper()
	vendors, split, err := clustervendors.WithSplitCounts("")
	if err != nil {
		c.t.Fatal(err)
	}
	listed, warnings, err := allocation.ListDRA(c.ctx, controlPlane.Client)
	if err != nil || len(warnings) > 0 {
		c.t.Fatalf("list DRA objects: %v %v", err, warnings)
	}
	pods, err := controlPlane.Client.CoreV1().Pods(c.ns).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	var nodes []corev1.Node
	for _, n := range c.nodes {
		live, err := controlPlane.Client.CoreV1().Nodes().Get(c.ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			c.t.Fatal(err)
		}
		nodes = append(nodes, *live)
	}
	listed.Vendors, listed.Nodes, listed.Pods, listed.DRASplit = vendors, nodes, pods.Items, split
	return allocation.ReadCluster(listed)
}

// HAMi's pods spread over a device-plugin node and two DRA nodes (HAMi's
// driver, NVIDIA's), and a native claim asking capacity of HAMi's
// driver's cards, read back as kubectl hami top reads them: every card
// once, of its node's kind; each DRA card charged exactly what the
// claims allocated on it consume; every pod holding what it asked; no
// card over-committed.
func TestAllocationReadsBothKinds(t *testing.T) {
	c := newCluster(t, "read-both", "1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB; "+
		"1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB, dra; 1 node x 2 cards of Tesla T4 15 GiB, dra nvidia", nil)
	spread := map[string]string{devices.NodePolicyAnnotation: string(devices.NodeSpread)}
	const pods, memory, cores = 9, 3000, 20
	for i := range pods {
		c.hamiPod(fmt.Sprintf("p%d", i), memory, cores, spread)
	}
	c.capacityClaim("native", dra.HAMiCore.DeviceClass, "memory=6000Mi", "cores=15")
	c.claimPod("native", "native", c.node(1), profile.SchedulerName)
	for i := range pods {
		c.waitRunning(fmt.Sprintf("p%d", i))
	}
	c.waitRunning("native")

	r := c.readAllocation()
	wantKind := map[string]string{c.node(0): allocation.KindDevicePlugin, c.node(1): dra.HAMiCore.Name, c.node(2): dra.NVIDIAGPU.Name}
	perNode, heldOn := map[string]int{}, map[string]int{}
	seen := map[string]bool{}
	for _, card := range r.Cards {
		perNode[card.Node]++
		heldOn[card.Node] += len(card.Holders)
		if seen[card.Node+"/"+card.UUID] {
			t.Errorf("card %s of node %s counted twice", card.UUID, card.Node)
		}
		seen[card.Node+"/"+card.UUID] = true
		if card.Kind != wantKind[card.Node] {
			t.Errorf("card %s of node %s is of kind %q, want %q", card.UUID, card.Node, card.Kind, wantKind[card.Node])
		}
	}
	for node := range wantKind {
		if perNode[node] != 2 || heldOn[node] == 0 {
			t.Errorf("node %s has %d cards read, %d holders; want 2 cards, some held", node, perNode[node], heldOn[node])
		}
	}

	// What the claims consume of each DRA card, by its uuid attribute.
	use := c.cardUse()
	for _, card := range r.Cards {
		if !card.OnDRA() {
			continue
		}
		want := use[card.UUID]
		if card.Used.MemoryMiB != want[0] || card.Used.Cores != want[1] {
			t.Errorf("DRA card %s of %s: read %d MiB, %d cores; its claims consume %d MiB, %d cores",
				card.UUID, card.Node, card.Used.MemoryMiB, card.Used.Cores, want[0], want[1])
		}
	}
	for i := range pods {
		key := fmt.Sprintf("%s/p%d", c.ns, i)
		if g := r.Grants[key]; len(g) != 1 || g[0].MemoryMiB != memory {
			t.Errorf("pod %s holds %+v, want one card of %d MiB", key, g, memory)
		}
	}
	if g := r.Grants[c.ns+"/native"]; len(g) != 1 || g[0].Claim != "native" || g[0].MemoryMiB != 6000 || g[0].Cores != 15 {
		t.Errorf("pod native holds %+v, want its claim's 6000 MiB and 15 cores", g)
	}
	if over := allocation.Overcommitments(r.Cards); len(over) > 0 {
		t.Errorf("over-committed: %v", over)
	}
	if len(r.UnreadableNodes)+len(r.PodProblems) > 0 {
		t.Errorf("not accounted: %v %v", r.UnreadableNodes, r.PodProblems)
	}
}
