package dra

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/dynamic"

	"github.com/hami-scheduler/hami-scheduler/apis/scheduling/v1alpha1"
	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/dra"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/internal/allocation"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
	"github.com/hami-scheduler/hami-scheduler/scheduler/profile"
)

// hamiPod creates a hami-scheduler pod asking one card with memory (MiB)
// and cores, on any of the cluster's nodes; annotations are HAMi's pod
// annotations (policies, selectors).
func (c *cluster) hamiPod(name string, memory, cores int, annotations map[string]string) *corev1.Pod {
	c.t.Helper()
	return c.create(c.hamiPodSpec(name, memory, cores, annotations))
}

// hamiPodSpec is the pod hamiPod creates.
func (c *cluster) hamiPodSpec(name string, memory, cores int, annotations map[string]string) *corev1.Pod {
	var names []string
	for _, n := range c.nodes {
		names = append(names, n.Name)
	}
	limits := quantities(string(nvidia.DefaultCountName), 1, string(nvidia.DefaultMemoryName), memory)
	if cores > 0 {
		limits[nvidia.DefaultCoresName] = quantities(string(nvidia.DefaultCoresName), cores)[nvidia.DefaultCoresName]
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: name, Annotations: annotations},
		Spec: corev1.PodSpec{
			SchedulerName: profile.SchedulerName,
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: names,
				}}}},
			}}},
			Containers: []corev1.Container{{Name: "cuda", Image: "cuda:sim", Resources: corev1.ResourceRequirements{Limits: limits}}},
		},
	}
}

// isDRANode reports whether the cluster's node runs a DRA driver.
func (c *cluster) isDRANode(name string) bool {
	for _, n := range c.nodes {
		if n.Name == name {
			_, ok := n.Labels["sim.hami.io/dra-driver"]
			return ok
		}
	}
	return false
}

// checkHAMiClaim checks a running HAMi pod on a DRA node: its claim,
// named in its status, is owned by it, allocated on one card of its node
// with the memory and cores it asked as consumed capacity (HAMi's driver;
// memory alone for NVIDIA's) and reserved for it; the driver gave its
// container those limits; and it carries none of the device plugin's
// annotations. It returns the claim's allocation result.
func (c *cluster) checkHAMiClaim(p *corev1.Pod, memory, cores int64) resourceapi.DeviceRequestAllocationResult {
	c.t.Helper()
	status := p.Status.ExtendedResourceClaimStatus
	if status == nil {
		c.t.Fatalf("pod %s on DRA node %s has no extendedResourceClaimStatus", p.Name, p.Spec.NodeName)
	}
	claim := c.checkReserved(status.ResourceClaimName, p)
	if len(claim.OwnerReferences) != 1 || claim.OwnerReferences[0].UID != p.UID {
		c.t.Errorf("claim %s owners %+v, want pod %s", claim.Name, claim.OwnerReferences, p.Name)
	}
	if m := status.RequestMappings; len(m) != 1 || m[0].ContainerName != "cuda" || m[0].ResourceName != string(nvidia.DefaultCountName) {
		c.t.Errorf("pod %s request mappings %+v, want cuda's %s", p.Name, m, nvidia.DefaultCountName)
	}
	result := claim.Status.Allocation.Devices.Results[0]
	driver, _ := dra.DriverNamed(result.Driver)
	m := result.ConsumedCapacity[driver.Memory]
	if m.Value() != memory*dra.MiB || result.ShareID == nil {
		c.t.Errorf("claim %s consumes memory %s (share %v), want %d MiB and a share ID", claim.Name, m.String(), result.ShareID, memory)
	}
	if driver.Cores != "" {
		if got := result.ConsumedCapacity[driver.Cores]; got.Value() != cores {
			c.t.Errorf("claim %s consumes cores %s, want %d", claim.Name, got.String(), cores)
		}
	}
	prepared, ok := agent.PreparedDevices(c.ns, p.Name)
	if !ok || len(prepared["cuda"]) != 1 || prepared["cuda"][0].MemoryMiB != memory {
		c.t.Errorf("pod %s's container got %+v, %v: want %d MiB", p.Name, prepared, ok, memory)
	}
	for _, k := range []string{nvidia.AllocatedAnnotation, nvidia.ToAllocateAnnotation, devices.BindPhase} {
		if v, found := p.Annotations[k]; found {
			c.t.Errorf("pod %s on a DRA node carries %s=%q", p.Name, k, v)
		}
	}
	return result
}

// checkNoOvercommit fails if a card of the cluster holds more than it has:
// device-plugin cards by the pods' assignment annotations, DRA cards by
// what their allocated claims consume and the grants of pods a device
// plugin served there (internal/allocation's one account per card), and
// every DRA device by its capacities.
func (c *cluster) checkNoOvercommit() {
	c.t.Helper()
	for _, o := range allocation.Overcommitments(c.readAllocation().Cards) {
		c.t.Errorf("over-committed: %s", o)
	}
	claims, err := controlPlane.Client.ResourceV1().ResourceClaims("").List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	slices, err := controlPlane.Client.ResourceV1().ResourceSlices().List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	capacity := map[dra.DeviceKey]map[resourceapi.QualifiedName]int64{}
	for _, s := range slices.Items {
		for _, d := range s.Spec.Devices {
			key := dra.DeviceKey{Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name, Device: d.Name}
			capacity[key] = map[resourceapi.QualifiedName]int64{}
			for name, v := range d.Capacity {
				capacity[key][name] = v.Value.Value()
			}
		}
	}
	used := map[dra.DeviceKey]map[resourceapi.QualifiedName]int64{}
	for _, claim := range claims.Items {
		if claim.Status.Allocation == nil {
			continue
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			key := dra.DeviceKey{Driver: r.Driver, Pool: r.Pool, Device: r.Device}
			if used[key] == nil {
				used[key] = map[resourceapi.QualifiedName]int64{}
			}
			for name, v := range r.ConsumedCapacity {
				used[key][name] += v.Value()
			}
		}
	}
	for key, u := range used {
		for name, v := range u {
			if have, ok := capacity[key][name]; ok && v > have {
				c.t.Errorf("DRA device %s/%s/%s over-committed: %s %d of %d", key.Driver, key.Pool, key.Device, name, v, have)
			}
		}
	}
}

// The same fractional pods run on both kinds of node, whichever the node
// policy chooses: spread over a device-plugin node and two DRA nodes (one
// with HAMi's driver, one with NVIDIA's), each DRA one with its claim
// allocated, reserved and consuming what it asked, its container given
// those limits by the driver; each device-plugin one with HAMi's
// assignment; no card of either kind over-committed.
func TestHAMiPodsOnBothKinds(t *testing.T) {
	c := newCluster(t, "both-kinds", "1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB; "+
		"1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB, dra; 1 node x 2 cards of Tesla T4 15 GiB, dra nvidia", nil)
	spread := map[string]string{devices.NodePolicyAnnotation: string(devices.NodeSpread)}
	const pods, memory, cores = 12, 4000, 20
	for i := range pods {
		c.hamiPod(fmt.Sprintf("p%02d", i), memory, cores, spread)
	}
	kinds := map[string]int{}
	for i := range pods {
		p := c.waitRunning(fmt.Sprintf("p%02d", i))
		if !c.isDRANode(p.Spec.NodeName) {
			if _, ok := p.Annotations[nvidia.AllocatedAnnotation]; !ok {
				t.Errorf("pod %s on device-plugin node %s has no %s", p.Name, p.Spec.NodeName, nvidia.AllocatedAnnotation)
			}
			kinds["device plugin"]++
			continue
		}
		kinds[c.checkHAMiClaim(p, memory, cores).Driver]++
	}
	for _, kind := range []string{"device plugin", dra.HAMiCore.Name, dra.NVIDIAGPU.Name} {
		if kinds[kind] == 0 {
			t.Errorf("no pod on a node of kind %s; per kind: %v", kind, kinds)
		}
	}
	c.checkNoOvercommit()
}

// A claim made elsewhere, asking capacity of the same cards (a native
// ResourceClaim, as HAMi-DRA's webhook writes them), is allocated by
// kube-scheduler's DynamicResources beside HAMi's claims from the one
// account of the cards: it lands where memory and cores are left, one no
// card can hold stays unallocated, and a HAMi pod placed after them sees
// what they took. Every pod runs; nothing is over-committed.
func TestNativeClaimsShareTheAccount(t *testing.T) {
	c := newCluster(t, "native-beside", "1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB, dra", nil)
	// One card gets 3 x 10000 MiB and 90 cores, the other 2 x 10000 MiB
	// and 60 cores (the card policy spreads).
	pods := map[string]int{}
	for i := range 5 {
		name := fmt.Sprintf("hami%d", i)
		c.hamiPod(name, 10000, 30, nil)
		pods[c.checkHAMiClaim(c.waitRunning(name), 10000, 30).Device]++
	}
	full, roomy := "hami-gpu-0", "hami-gpu-1"
	if pods[full] == 2 {
		full, roomy = roomy, full
	}
	if pods[full] != 3 || pods[roomy] != 2 {
		t.Fatalf("HAMi's pods per card %v, want 3 and 2", pods)
	}
	// Only the roomy card has 20000 MiB and 40 cores left.
	c.capacityClaim("native-fits", dra.HAMiCore.DeviceClass, "memory=20000Mi", "cores=40")
	c.claimPod("native-fits", "native-fits", c.node(0), profile.SchedulerName)
	c.waitRunning("native-fits")
	fits, err := c.claim("native-fits")
	if err != nil {
		t.Fatal(err)
	}
	if d := fits.Status.Allocation.Devices.Results[0].Device; d != roomy {
		t.Errorf("native-fits allocated on %s, want %s", d, roomy)
	}
	c.capacityClaim("native-too-big", dra.HAMiCore.DeviceClass, "memory=20000Mi", "cores=0")
	c.claimPod("native-too-big", "native-too-big", c.node(0), profile.SchedulerName)
	c.waitEvent("native-too-big", "FailedScheduling")

	c.hamiPod("hami-after", 5000, 10, nil)
	if d := c.checkHAMiClaim(c.waitRunning("hami-after"), 5000, 10).Device; d != full {
		t.Errorf("hami-after allocated on %s, want %s (native-fits took the last cores of %s)", d, full, roomy)
	}
	c.checkNoOvercommit()
}

// cardUse sums, per card UUID, what the namespace's pods hold by HAMi's
// assignment annotations and what allocated claims consume of DRA devices
// (named by their uuid attribute), in MiB and cores, so that a card that
// moved from a device plugin to a DRA driver is checked across both.
func (c *cluster) cardUse() map[string][2]int64 {
	c.t.Helper()
	use := map[string][2]int64{}
	pods, err := controlPlane.Client.CoreV1().Pods(c.ns).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	for _, p := range pods.Items {
		raw, ok := p.Annotations[nvidia.AllocatedAnnotation]
		if !ok || p.Spec.NodeName == "" || p.Annotations[devices.BindPhase] == devices.BindPhaseFailed ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			// Held only by a pod bound, whose hand-over did not fail.
			continue
		}
		a, err := devices.DecodeAssignment(raw)
		if err != nil {
			c.t.Fatalf("pod %s: %v", p.Name, err)
		}
		for _, grants := range a {
			for _, g := range grants {
				u := use[g.UUID]
				use[g.UUID] = [2]int64{u[0] + int64(g.MemoryMiB), u[1] + int64(g.Cores)}
			}
		}
	}
	slices, err := controlPlane.Client.ResourceV1().ResourceSlices().List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	uuids := map[dra.DeviceKey]string{}
	for _, s := range slices.Items {
		for _, d := range s.Spec.Devices {
			if a, ok := d.Attributes["uuid"]; ok && a.StringValue != nil {
				uuids[dra.DeviceKey{Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name, Device: d.Name}] = *a.StringValue
			}
		}
	}
	claims, err := controlPlane.Client.ResourceV1().ResourceClaims(c.ns).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	for _, claim := range claims.Items {
		if claim.Status.Allocation == nil {
			continue
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			uuid, ok := uuids[dra.DeviceKey{Driver: r.Driver, Pool: r.Pool, Device: r.Device}]
			if !ok {
				c.t.Errorf("claim %s holds %s/%s/%s, which no slice publishes", claim.Name, r.Driver, r.Pool, r.Device)
				continue
			}
			memory, cores := r.ConsumedCapacity["memory"], r.ConsumedCapacity["cores"]
			u := use[uuid]
			use[uuid] = [2]int64{u[0] + memory.Value()/dra.MiB, u[1] + cores.Value()}
		}
	}
	return use
}

// A node moved from HAMi's device plugin to HAMi's DRA driver while pods
// keep arriving and ending: pods running on it keep their cards until
// they end, new pods get claims there beside them, no pod is left pending,
// and no card holds more memory or cores than it has, counted across the
// pods' annotations and the claims.
func TestNodeMigratesUnderArrivals(t *testing.T) {
	c := newCluster(t, "migrate", "2 nodes x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB", nil)
	const pods, memory, cores = 30, 8000, 25
	checkCards := func(when string) {
		t.Helper()
		for uuid, u := range c.cardUse() {
			if u[0] > 40960 || u[1] > 100 {
				t.Errorf("%s: card %s holds %d MiB and %d cores, more than it has", when, uuid, u[0], u[1])
			}
		}
	}
	// Each pod ends (is deleted) once it has run, keeping alive more than
	// one node holds: 4 pods fill a card's cores, 8 a node.
	const alive = 12
	running := 0
	end := func(name string) {
		c.waitRunning(name)
		running++
		if err := controlPlane.Client.CoreV1().Pods(c.ns).Delete(c.ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range pods {
		c.hamiPod(fmt.Sprintf("p%02d", i), memory, cores, nil)
		if i == alive+1 {
			// Pods are running on both nodes: install HAMi's DRA driver's
			// DeviceClass, as its chart does, and move the first node.
			driver, err := simnode.ParseSpecs("1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB, dra")
			if err != nil {
				t.Fatal(err)
			}
			if err := localcluster.InstallDeviceClasses(c.ctx, controlPlane.Config, simnode.DeviceClasses(driver)); err != nil {
				t.Fatal(err)
			}
			if err := simnode.SwitchToDRA(c.ctx, controlPlane.Client, c.node(0), ""); err != nil {
				t.Fatal(err)
			}
			checkCards("right after the switch")
		}
		if i >= alive {
			// Arrivals and ends interleave.
			end(fmt.Sprintf("p%02d", i-alive))
			checkCards(fmt.Sprintf("after p%02d ended", i-alive))
		}
	}
	onDRA := 0
	for i := pods - alive; i < pods; i++ {
		p := c.waitRunning(fmt.Sprintf("p%02d", i))
		if p.Spec.NodeName == c.node(0) && p.Status.ExtendedResourceClaimStatus != nil {
			c.checkHAMiClaim(p, memory, cores)
			onDRA++
		}
	}
	checkCards("at the end")
	if onDRA == 0 {
		t.Error("no pod placed on the migrated node after the switch")
	}
	if running != pods-alive {
		t.Errorf("%d pods ran and ended, want %d", running, pods-alive)
	}
}

// HAMi's device quota counts what the namespace's claims take of DRA
// cards: pods created together that each fit but together exceed
// limits.nvidia.com/gpumem run as far as the quota goes; the rest stay
// Pending, refused with the quota's reason.
func TestQuotaCountsClaims(t *testing.T) {
	c := newCluster(t, "dra-quota", "1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB, dra", nil)
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: c.ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"limits.nvidia.com/gpumem": *resource.NewQuantity(10000, resource.DecimalSI)}},
	}
	if _, err := controlPlane.Client.CoreV1().ResourceQuotas(c.ns).Create(c.ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const pods = 6
	for i := range pods {
		c.hamiPod(fmt.Sprintf("p%d", i), 3000, 10, nil)
	}
	c.eventually("3 pods running and 3 refused by quota", func() (bool, string) {
		list, err := controlPlane.Client.CoreV1().Pods(c.ns).List(c.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		running, refused := 0, 0
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && strings.Contains(cond.Message, "exceeding resource quota") {
					refused++
				}
			}
		}
		return running == 3 && refused == pods-3, fmt.Sprintf("%d running, %d refused by quota", running, refused)
	})
}

// A gang of scheduler-plugins' PodGroup whose members fit only on a DRA
// node's cards runs whole: Coscheduling's check that the cards could take
// the group (the HAMi plugin's GroupRoom) sees DRA cards.
func TestGangOnDRANode(t *testing.T) {
	c := newCluster(t, "dra-gang", "1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB, dra", nil)
	pg := &v1alpha1.PodGroup{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "PodGroup"},
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: "gang"},
		Spec:       v1alpha1.PodGroupSpec{MinMember: 3},
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pg)
	if err != nil {
		t.Fatal(err)
	}
	delete(obj, "status")
	client, err := dynamic.NewForConfig(controlPlane.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Resource(v1alpha1.Resource).Namespace(c.ns).Create(c.ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		p := c.hamiPodSpec(fmt.Sprintf("m%d", i), 20000, 50, nil)
		p.Labels = map[string]string{v1alpha1.PodGroupLabel: "gang"}
		c.create(p)
	}
	for i := range 3 {
		c.checkHAMiClaim(c.waitRunning(fmt.Sprintf("m%d", i)), 20000, 50)
	}
	c.checkNoOvercommit()
}

// A high-priority HAMi pod preempts a low-priority one whose claim holds
// the DRA card it needs: preemption sees the victim's claim free its
// share, evicts it, and the preemptor runs there with its own claim; the
// victim's claim goes with it.
func TestPreemptionOnDRANode(t *testing.T) {
	c := newCluster(t, "dra-preempt", "1 node x 1 card of NVIDIA A100-SXM4-40GB 40 GiB, dra", nil)
	for name, value := range map[string]int32{"dra-low": 10, "dra-high": 1000} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		if _, err := controlPlane.Client.SchedulingV1().PriorityClasses().Create(c.ctx, pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	victim := c.hamiPodSpec("victim", 30000, 50, nil)
	victim.Spec.PriorityClassName = "dra-low"
	c.create(victim)
	victimClaim := c.waitRunning("victim").Status.ExtendedResourceClaimStatus.ResourceClaimName

	preemptor := c.hamiPodSpec("preemptor", 20000, 50, nil)
	preemptor.Spec.PriorityClassName = "dra-high"
	c.create(preemptor)
	c.checkHAMiClaim(c.waitRunning("preemptor"), 20000, 50)
	c.eventually("victim and its claim gone", func() (bool, string) {
		_, podErr := c.pod("victim")
		_, claimErr := c.claim(victimClaim)
		return apierrors.IsNotFound(podErr) && apierrors.IsNotFound(claimErr), fmt.Sprintf("pod: %v, claim: %v", podErr, claimErr)
	})
	c.checkNoOvercommit()
}

// A claim an earlier scheduler wrote for a pod it never bound (stopped
// between PreBind and Bind: allocated, reserved, owned by the pod still
// pending) is deleted when the pod is placed again: it holds its card no
// longer, and the pod runs with one claim. The stale claim leaves too
// little of the one card for the pod; kept, the pod would never run.
func TestStaleClaimOfUnboundPod(t *testing.T) {
	c := newCluster(t, "stale-claim", "1 node x 1 card of NVIDIA A100-SXM4-40GB 40 GiB, dra", nil)
	spec := c.hamiPodSpec("p", 20000, 50, nil)
	spec.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "test.hami.io/hold"}}
	p := c.create(spec)
	stale := c.writeHAMiClaim(p, c.node(0), 30000, 80)

	p.Spec.SchedulingGates = nil
	if _, err := controlPlane.Client.CoreV1().Pods(c.ns).Update(c.ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.checkHAMiClaim(c.waitRunning("p"), 20000, 50)
	c.eventually("stale claim "+stale.Name+" deleted", func() (bool, string) {
		_, err := c.claim(stale.Name)
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	c.checkNoOvercommit()
}

// writeHAMiClaim writes the claim hami-scheduler's PreBind writes for the
// pod on the node's first DRA card (memory MiB, cores): created, then
// allocated and reserved for the pod.
func (c *cluster) writeHAMiClaim(p *corev1.Pod, node string, memory, cores int32) *resourceapi.ResourceClaim {
	c.t.Helper()
	list, err := controlPlane.Client.ResourceV1().ResourceSlices().List(c.ctx, metav1.ListOptions{FieldSelector: resourceapi.ResourceSliceSelectorNodeName + "=" + node})
	if err != nil {
		c.t.Fatal(err)
	}
	var nodeSlices []*resourceapi.ResourceSlice
	for i := range list.Items {
		nodeSlices = append(nodeSlices, &list.Items[i])
	}
	inv := dra.Inventory(nodeSlices, func(string) int32 { return 10 })
	if len(inv.Devices) == 0 {
		c.t.Fatalf("node %s publishes no DRA card: %v", node, inv.Problems)
	}
	d := inv.Devices[0]
	grant := devices.Grant{UUID: d.Card.UUID, Vendor: d.Driver.Vendor, MemoryMiB: memory, Cores: cores}
	claim, err := dra.NewClaim(p, node, []dra.Share{{Resource: nvidia.DefaultCountName, Grant: grant, Device: d}}, uuid.NewUUID)
	if err != nil {
		c.t.Fatal(err)
	}
	obj := claim.Object.DeepCopy()
	obj.Status = resourceapi.ResourceClaimStatus{}
	created, err := controlPlane.Client.ResourceV1().ResourceClaims(c.ns).Create(c.ctx, obj, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	created.Status = claim.Object.Status
	written, err := controlPlane.Client.ResourceV1().ResourceClaims(c.ns).UpdateStatus(c.ctx, created, metav1.UpdateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return written
}

// On a DRA card an init container's share is a result of its own in the
// pod's claim and consumes its capacity beside the regular containers'
// (HAMi's collapsed accounting on device-plugin nodes counts the larger
// only): a pod whose init and main containers fit the card only
// collapsed is not placed there, and nothing is over-committed.
func TestInitContainerSharesAddOnDRACard(t *testing.T) {
	c := newCluster(t, "dra-inits", "1 node x 1 card of NVIDIA A100-SXM4-40GB 40 GiB, dra", nil)
	c.hamiPod("first", 20000, 20, nil)
	c.checkHAMiClaim(c.waitRunning("first"), 20000, 20)
	p := c.hamiPodSpec("inits", 15000, 20, nil)
	p.Spec.InitContainers = []corev1.Container{{Name: "prepare", Image: "cuda:sim", Resources: p.Spec.Containers[0].Resources}}
	c.create(p)
	if msg := c.waitEvent("inits", "FailedScheduling"); !strings.Contains(msg, "insufficient memory") {
		t.Errorf("inits turned away with %q, want insufficient memory", msg)
	}
	c.checkNoOvercommit()
}
