package allocation

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/dra"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

const gib = 1 << 30

// draDevice is a card as a DRA driver of the model publishes it: shared
// (allowMultipleAllocations) or not, with the driver's capacities.
func draDevice(driver dra.Driver, index int64, uuid string, memory int64, shared bool) resourceapi.Device {
	d := resourceapi.Device{
		Name: fmt.Sprintf("gpu-%d", index),
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"type":        {StringValue: ptr.To(driver.Type)},
			"uuid":        {StringValue: ptr.To(uuid)},
			"productName": {StringValue: ptr.To("NVIDIA A100-SXM4-40GB")},
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			driver.Memory: {Value: *resource.NewQuantity(memory, resource.BinarySI)},
		},
	}
	if driver.Cores != "" {
		d.Capacity[driver.Cores] = resourceapi.DeviceCapacity{Value: resource.MustParse("100")}
	}
	if shared {
		d.AllowMultipleAllocations = ptr.To(true)
	}
	return d
}

// nodeSlice is the node's slice of the driver, its pool named after it.
func nodeSlice(driver dra.Driver, node string, ds ...resourceapi.Device) resourceapi.ResourceSlice {
	return resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + driver.Name},
		Spec: resourceapi.ResourceSliceSpec{
			Driver: driver.Name, NodeName: ptr.To(node), Devices: ds,
			Pool: resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
		},
	}
}

// runningPod is a running pod bound to node, its containers named.
func runningPod(name, node string, containers ...string) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Annotations: map[string]string{}},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c})
	}
	return p
}

// hamiClaim is the claim hami-scheduler writes for the pod's container 0
// on the device (dra.NewClaim), and the pod naming it in its status.
func hamiClaim(t *testing.T, p corev1.Pod, d dra.Device, memoryMiB, cores int32) (corev1.Pod, resourceapi.ResourceClaim) {
	t.Helper()
	shares := []dra.Share{{Container: 0, Resource: nvidia.DefaultCountName, Grant: devices.Grant{UUID: d.Card.UUID, MemoryMiB: memoryMiB, Cores: cores}, Device: d}}
	c, err := dra.NewClaim(&p, p.Spec.NodeName, shares, func() types.UID { return "share-" + types.UID(p.Name) })
	if err != nil {
		t.Fatal(err)
	}
	claim := *c.Object
	claim.Name = p.Name + "-hami-x"
	p.Status.ExtendedResourceClaimStatus = &corev1.PodExtendedResourceClaimStatus{ResourceClaimName: claim.Name, RequestMappings: c.Mappings}
	return p, claim
}

// nativeClaim is a claim allocated on the device, by kube-scheduler's
// DynamicResources, with the capacity consumed as a share ("memory=10Gi";
// none: the device whole), reserved for pods; and each pod using it in
// its container c through the entry "gpu".
func nativeClaim(name string, d dra.Device, pods []*corev1.Pod, capacity ...string) resourceapi.ResourceClaim {
	r := resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: d.Key.Driver, Pool: d.Key.Pool, Device: d.Key.Device}
	if len(capacity) > 0 {
		r.ShareID = ptr.To(types.UID("share-" + name))
		r.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{}
		for _, kv := range capacity {
			k, v, _ := strings.Cut(kv, "=")
			r.ConsumedCapacity[resourceapi.QualifiedName(k)] = resource.MustParse(v)
		}
	}
	claim := resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Status:     resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{r}}}},
	}
	for _, p := range pods {
		claim.Status.ReservedFor = append(claim.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: p.Name, UID: p.UID})
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, corev1.PodResourceClaim{Name: "gpu", ResourceClaimName: ptr.To(name)})
		p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	}
	return claim
}

// annotated gives the pod HAMi's assignment of the card, as a device
// plugin served it.
func annotated(p corev1.Pod, uuid string, memoryMiB, cores int32) corev1.Pod {
	p.Annotations[nvidia.AllocatedAnnotation] = devices.EncodeAssignment(devices.Assignment{{{UUID: uuid, Vendor: nvidia.VendorWord, MemoryMiB: memoryMiB, Cores: cores}}})
	p.Annotations[devices.AssignedNode] = p.Spec.NodeName
	return p
}

// holderText is a holder as "ns/pod[container] claim MiB/cores".
func holderText(h Holder) string {
	return fmt.Sprintf("%s/%s[%s] %s %d/%d", h.Namespace, h.Pod, h.Container, h.Claim, h.MemoryMiB, h.Cores)
}

func TestReadClusterDRA(t *testing.T) {
	vendors := nvidiaOnly(t)
	hamiSlice := nodeSlice(dra.HAMiCore, "dra-0", draDevice(dra.HAMiCore, 0, "GPU-h0", 40*gib, true), draDevice(dra.HAMiCore, 1, "GPU-h1", 40*gib, true))
	nvidiaSlice := nodeSlice(dra.NVIDIAGPU, "dra-1", draDevice(dra.NVIDIAGPU, 0, "GPU-n0", 16*gib, false))
	slices := []resourceapi.ResourceSlice{hamiSlice, nvidiaSlice}
	inventory := func(s resourceapi.ResourceSlice) []dra.Device {
		return dra.Inventory([]*resourceapi.ResourceSlice{&s}, func(string) int32 { return 10 }).Devices
	}
	h0, n0 := inventory(hamiSlice)[0], inventory(nvidiaSlice)[0]
	nodes := []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "dra-0"}}, {ObjectMeta: metav1.ObjectMeta{Name: "dra-1"}}}

	type want struct {
		// used is card GPU-h0's (or the card named) sharers, MiB, cores.
		card     string
		used     [3]int64
		holders  []string
		grants   map[string][]string
		over     int
		problems []string
	}
	tests := []struct {
		name   string
		pods   func() []corev1.Pod
		claims func(pods []corev1.Pod) ([]corev1.Pod, []resourceapi.ResourceClaim)
		want   want
	}{
		{
			name: "HAMi's claim: a share, its pod and container named",
			pods: func() []corev1.Pod { return []corev1.Pod{runningPod("p", "dra-0", "cuda")} },
			claims: func(pods []corev1.Pod) ([]corev1.Pod, []resourceapi.ResourceClaim) {
				p, c := hamiClaim(t, pods[0], h0, 10000, 30)
				return []corev1.Pod{p}, []resourceapi.ResourceClaim{c}
			},
			want: want{card: "GPU-h0", used: [3]int64{1, 10000, 30},
				holders: []string{"ns/p[cuda] p-hami-x 10000/30"},
				grants:  map[string][]string{"ns/p": {"cuda GPU-h0 #0 p-hami-x 10000/30"}}},
		},
		{
			name: "a native claim asking capacity, shared by two pods",
			pods: func() []corev1.Pod { return []corev1.Pod{runningPod("a", "dra-0", "c"), runningPod("b", "dra-0", "c")} },
			claims: func(pods []corev1.Pod) ([]corev1.Pod, []resourceapi.ResourceClaim) {
				c := nativeClaim("shared", h0, []*corev1.Pod{&pods[0], &pods[1]}, "memory=5Gi", "cores=20")
				return pods, []resourceapi.ResourceClaim{c}
			},
			want: want{card: "GPU-h0", used: [3]int64{1, 5120, 20},
				holders: []string{"ns/a[c] shared 5120/20"},
				grants:  map[string][]string{"ns/a": {"c GPU-h0 #0 shared 5120/20"}, "ns/b": {"c GPU-h0 #0 shared 5120/20"}}},
		},
		{
			name: "a device allocated whole: all of it",
			pods: func() []corev1.Pod { return []corev1.Pod{runningPod("w", "dra-1", "c")} },
			claims: func(pods []corev1.Pod) ([]corev1.Pod, []resourceapi.ResourceClaim) {
				return pods, []resourceapi.ResourceClaim{nativeClaim("whole", n0, []*corev1.Pod{&pods[0]})}
			},
			want: want{card: "GPU-n0", used: [3]int64{1, 16384, 100},
				holders: []string{"ns/w[c] whole 16384/100"},
				grants:  map[string][]string{"ns/w": {"c GPU-n0 #0 whole 16384/100"}}},
		},
		{
			name: "a node moved to a DRA driver: a pod's annotation and a claim on one card",
			pods: func() []corev1.Pod {
				return []corev1.Pod{annotated(runningPod("old", "dra-0", "cuda"), "GPU-h0", 20000, 50), runningPod("new", "dra-0", "cuda")}
			},
			claims: func(pods []corev1.Pod) ([]corev1.Pod, []resourceapi.ResourceClaim) {
				p, c := hamiClaim(t, pods[1], h0, 10000, 30)
				return []corev1.Pod{pods[0], p}, []resourceapi.ResourceClaim{c}
			},
			want: want{card: "GPU-h0", used: [3]int64{2, 30000, 80},
				holders: []string{"ns/old[cuda]  20000/50", "ns/new[cuda] new-hami-x 10000/30"},
				grants:  map[string][]string{"ns/old": {"cuda GPU-h0 #0  20000/50"}, "ns/new": {"cuda GPU-h0 #0 new-hami-x 10000/30"}}},
		},
		{
			name: "an over-committed DRA card is reported",
			pods: func() []corev1.Pod {
				return []corev1.Pod{annotated(runningPod("old", "dra-0", "cuda"), "GPU-h0", 30000, 50), runningPod("n", "dra-0", "c")}
			},
			claims: func(pods []corev1.Pod) ([]corev1.Pod, []resourceapi.ResourceClaim) {
				return pods, []resourceapi.ResourceClaim{nativeClaim("big", h0, []*corev1.Pod{&pods[1]}, "memory=20Gi", "cores=10")}
			},
			want: want{card: "GPU-h0", used: [3]int64{2, 50480, 60}, over: 1,
				holders: []string{"ns/old[cuda]  30000/50", "ns/n[c] big 20480/10"},
				grants:  map[string][]string{"ns/old": {"cuda GPU-h0 #0  30000/50"}, "ns/n": {"c GPU-h0 #0 big 20480/10"}}},
		},
		{
			name: "more claims than the split count: not an over-commit on a DRA card",
			pods: func() []corev1.Pod { return nil },
			claims: func([]corev1.Pod) ([]corev1.Pod, []resourceapi.ResourceClaim) {
				var claims []resourceapi.ResourceClaim
				for i := range 11 {
					claims = append(claims, nativeClaim(fmt.Sprintf("c%02d", i), h0, nil, "memory=1Gi", "cores=1"))
				}
				return nil, claims
			},
			want: want{card: "GPU-h0", used: [3]int64{11, 11 * 1024, 11},
				holders: func() []string {
					var out []string
					for i := range 11 {
						out = append(out, fmt.Sprintf("ns/[] c%02d 1024/1", i))
					}
					return out
				}()},
		},
		{
			name: "admin access takes nothing; a vanished device is reported",
			pods: func() []corev1.Pod { return []corev1.Pod{runningPod("p", "dra-0", "c")} },
			claims: func(pods []corev1.Pod) ([]corev1.Pod, []resourceapi.ResourceClaim) {
				admin := nativeClaim("admin", h0, []*corev1.Pod{&pods[0]})
				admin.Status.Allocation.Devices.Results[0].AdminAccess = ptr.To(true)
				gone := nativeClaim("gone", h0, nil, "memory=1Gi")
				gone.Status.Allocation.Devices.Results[0].Device = "gpu-7"
				return pods, []resourceapi.ResourceClaim{admin, gone}
			},
			want: want{card: "GPU-h0",
				problems: []string{"pod ns/gone: ResourceClaim gone holds device hami-core-gpu.project-hami.io/dra-0/gpu-7, which node dra-0 does not publish"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods, claims := tt.claims(tt.pods())
			r := ReadCluster(Cluster{Vendors: vendors, Nodes: nodes, Pods: pods, Slices: slices, Claims: claims})
			if len(r.Cards) != 3 {
				t.Fatalf("cards %+v, want the three DRA cards", r.Cards)
			}
			var card *CardUse
			for i := range r.Cards {
				if r.Cards[i].UUID == tt.want.card {
					card = &r.Cards[i]
				}
			}
			if card == nil || !card.OnDRA() {
				t.Fatalf("no DRA card %s in %+v", tt.want.card, r.Cards)
			}
			if got := [3]int64{int64(card.Used.Sharers), card.Used.MemoryMiB, card.Used.Cores}; got != tt.want.used {
				t.Errorf("card %s used %v, want %v", card.UUID, got, tt.want.used)
			}
			var holders []string
			for _, h := range card.Holders {
				holders = append(holders, holderText(h))
			}
			if diff := cmp.Diff(tt.want.holders, holders); diff != "" {
				t.Errorf("holders (-want +got):\n%s", diff)
			}
			if len(card.Pods) != len(card.Holders) {
				t.Errorf("pods %v not aligned with holders %v", card.Pods, holders)
			}
			grants := map[string][]string{}
			for key, gs := range r.Grants {
				for _, g := range gs {
					grants[key] = append(grants[key], fmt.Sprintf("%s %s #%d %s %d/%d", g.Container, g.UUID, g.Index, g.Claim, g.MemoryMiB, g.Cores))
				}
			}
			if tt.want.grants == nil {
				tt.want.grants = map[string][]string{}
			}
			if diff := cmp.Diff(tt.want.grants, grants); diff != "" {
				t.Errorf("grants (-want +got):\n%s", diff)
			}
			if over := Overcommitments(r.Cards); len(over) != tt.want.over {
				t.Errorf("over-commitments %v, want %d", over, tt.want.over)
			}
			if diff := cmp.Diff(tt.want.problems, r.PodProblems); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// Each card says its kind; a DRA card's split count is the vendor's; a
// card both a device plugin and a driver list is one card; an unreadable
// DRA device is reported with its node.
func TestReadClusterKinds(t *testing.T) {
	vendors := nvidiaOnly(t)
	noUUID := draDevice(dra.HAMiCore, 3, "", 40*gib, true)
	slices := []resourceapi.ResourceSlice{
		nodeSlice(dra.HAMiCore, "dra-0", draDevice(dra.HAMiCore, 0, "GPU-h0", 40*gib, true), noUUID),
		// The device plugin's node also publishes its card 0: one card.
		nodeSlice(dra.NVIDIAGPU, "dp-0", draDevice(dra.NVIDIAGPU, 0, "GPU-d0", 40*gib, true)),
		// A node not read.
		nodeSlice(dra.HAMiCore, "other", draDevice(dra.HAMiCore, 0, "GPU-o0", 40*gib, true)),
	}
	dp := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dp-0", Annotations: map[string]string{
		nvidia.RegisterAnnotation: `[{"id":"GPU-d0","index":0,"count":10,"devmem":40960,"devcore":100,"type":"NVIDIA-A100","health":true}]`,
	}}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{nvidia.DefaultCountName: resource.MustParse("10")}}}
	nodes := []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "dra-0"}}, dp}
	r := ReadCluster(Cluster{Vendors: vendors, Nodes: nodes, Slices: slices, DRASplit: func(string) int32 { return 4 }})
	var got []string
	for _, c := range r.Cards {
		got = append(got, fmt.Sprintf("%s %s (also %q) %s split %d", c.Node, c.Kind, c.AlsoDRA, c.UUID, c.Split))
	}
	want := []string{`dp-0 device-plugin (also "gpu.nvidia.com") GPU-d0 split 10`, `dra-0 hami-core-gpu.project-hami.io (also "") GPU-h0 split 4`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cards (-want +got):\n%s", diff)
	}
	if len(r.UnreadableNodes) != 1 || !strings.Contains(r.UnreadableNodes[0], "node dra-0: hami-core-gpu.project-hami.io device gpu-3: no uuid attribute") ||
		!strings.Contains(r.NodeErrors["dra-0"], "gpu-3") {
		t.Errorf("unreadable %v, node errors %v: want dra-0's device gpu-3", r.UnreadableNodes, r.NodeErrors)
	}
}
