package dra

import (
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
)

const gib = 1 << 30

// ten is a split count of 10 for every vendor.
func ten(string) int32 { return 10 }

// hamiDevice is a card as HAMi's DRA driver publishes it.
func hamiDevice(minor int64, uuid string, memory int64) resourceapi.Device {
	return resourceapi.Device{
		Name: "hami-gpu-" + string(rune('0'+minor)),
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"type":        {StringValue: ptr.To("hami-gpu")},
			"uuid":        {StringValue: ptr.To(uuid)},
			"minor":       {IntValue: ptr.To(minor)},
			"productName": {StringValue: ptr.To("NVIDIA A100-SXM4-40GB")},
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			"cores": {Value: resource.MustParse("100"), RequestPolicy: &resourceapi.CapacityRequestPolicy{
				Default:    ptr.To(resource.MustParse("100")),
				ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: ptr.To(resource.MustParse("0")), Max: ptr.To(resource.MustParse("100")), Step: ptr.To(resource.MustParse("1"))},
			}},
			"memory": {Value: *resource.NewQuantity(memory, resource.BinarySI), RequestPolicy: &resourceapi.CapacityRequestPolicy{
				Default:    resource.NewQuantity(memory, resource.BinarySI),
				ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: ptr.To(resource.MustParse("1Mi")), Max: resource.NewQuantity(memory, resource.BinarySI), Step: ptr.To(resource.MustParse("1Mi"))},
			}},
		},
		AllowMultipleAllocations: ptr.To(true),
	}
}

// nvidiaDevice is a card as NVIDIA's DRA driver publishes it with
// ConsumableShares in memory mode.
func nvidiaDevice(minor int64, uuid string, memory int64, numa int64) resourceapi.Device {
	return resourceapi.Device{
		Name: "gpu-" + string(rune('0'+minor)),
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"type":                            {StringValue: ptr.To("gpu")},
			"uuid":                            {StringValue: ptr.To(uuid)},
			"productName":                     {StringValue: ptr.To("Tesla T4")},
			"resource.kubernetes.io/numaNode": {IntValue: ptr.To(numa)},
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			"memory": {Value: *resource.NewQuantity(memory, resource.BinarySI), RequestPolicy: &resourceapi.CapacityRequestPolicy{
				Default:    resource.NewQuantity(memory, resource.BinarySI),
				ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: ptr.To(resource.MustParse("1Mi")), Max: resource.NewQuantity(memory, resource.BinarySI), Step: ptr.To(resource.MustParse("1Mi"))},
			}},
		},
		AllowMultipleAllocations: ptr.To(true),
	}
}

func slice(driver, pool string, generation int64, ds ...resourceapi.Device) *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{
		Driver: driver, Pool: resourceapi.ResourcePool{Name: pool, Generation: generation, ResourceSliceCount: 1},
		NodeName: ptr.To(pool), Devices: ds,
	}}
}

func TestInventory(t *testing.T) {
	plain := hamiDevice(2, "GPU-c", 40*gib)
	plain.AllowMultipleAllocations = nil
	tainted := hamiDevice(3, "GPU-d", 40*gib)
	tainted.Taints = []resourceapi.DeviceTaint{{Key: "gpu.nvidia.com/xid", Effect: resourceapi.DeviceTaintEffectNoSchedule}}
	noUUID := hamiDevice(4, "", 40*gib)
	oddCores := hamiDevice(5, "GPU-f", 40*gib)
	oddCores.Capacity["cores"] = resourceapi.DeviceCapacity{Value: resource.MustParse("200")}
	notACard := hamiDevice(6, "GPU-g", 40*gib)
	notACard.Attributes["type"] = resourceapi.DeviceAttribute{StringValue: ptr.To("mig")}
	qualified := nvidiaDevice(1, "GPU-t1", 15*gib, 1)
	qualified.Attributes["gpu.nvidia.com/uuid"] = qualified.Attributes["uuid"]
	delete(qualified.Attributes, "uuid")

	tests := []struct {
		name         string
		slices       []*resourceapi.ResourceSlice
		want         []devices.Card
		wantShared   []bool
		wantProblems []string
	}{
		{
			name:   "HAMi's driver",
			slices: []*resourceapi.ResourceSlice{slice(HAMiCore.Name, "n1", 1, hamiDevice(0, "GPU-a", 40*gib), hamiDevice(1, "GPU-b", 40*gib))},
			want: []devices.Card{
				{UUID: "GPU-a", Index: 0, Split: 10, MemoryMiB: 40960, Cores: 100, Model: "NVIDIA A100-SXM4-40GB", Mode: "hami-core", Healthy: true},
				{UUID: "GPU-b", Index: 1, Split: 10, MemoryMiB: 40960, Cores: 100, Model: "NVIDIA A100-SXM4-40GB", Mode: "hami-core", Healthy: true},
			},
			wantShared: []bool{true, true},
		},
		{
			name:   "NVIDIA's driver: model as HAMi registers it, NUMA, qualified attributes",
			slices: []*resourceapi.ResourceSlice{slice(NVIDIAGPU.Name, "n1", 1, nvidiaDevice(0, "GPU-t0", 15*gib, 0), qualified)},
			want: []devices.Card{
				{UUID: "GPU-t0", Index: 0, Split: 10, MemoryMiB: 15360, Cores: 100, Model: "NVIDIA-Tesla T4", Mode: "hami-core", Healthy: true},
				{UUID: "GPU-t1", Index: 1, Split: 10, MemoryMiB: 15360, Cores: 100, Model: "NVIDIA-Tesla T4", NUMA: 1, Mode: "hami-core", Healthy: true},
			},
			wantShared: []bool{true, true},
		},
		{
			name:       "a device not shared goes whole; a tainted one is unhealthy",
			slices:     []*resourceapi.ResourceSlice{slice(HAMiCore.Name, "n1", 1, plain, tainted)},
			want:       []devices.Card{{UUID: "GPU-c", Index: 2, Split: 1, MemoryMiB: 40960, Cores: 100, Model: "NVIDIA A100-SXM4-40GB", Mode: "hami-core", Healthy: true}, {UUID: "GPU-d", Index: 3, Split: 10, MemoryMiB: 40960, Cores: 100, Model: "NVIDIA A100-SXM4-40GB", Mode: "hami-core"}},
			wantShared: []bool{false, true},
		},
		{
			name: "only the newest generation of a pool; other drivers and types ignored",
			slices: []*resourceapi.ResourceSlice{
				slice(HAMiCore.Name, "n1", 1, hamiDevice(0, "GPU-old", 40*gib)),
				slice(HAMiCore.Name, "n1", 2, hamiDevice(0, "GPU-new", 40*gib), notACard),
				slice("example.com/nic", "n1", 1, hamiDevice(0, "NIC-0", 40*gib)),
			},
			want:       []devices.Card{{UUID: "GPU-new", Index: 0, Split: 10, MemoryMiB: 40960, Cores: 100, Model: "NVIDIA A100-SXM4-40GB", Mode: "hami-core", Healthy: true}},
			wantShared: []bool{true},
		},
		{
			name:         "unreadable devices are left out, each with its reason",
			slices:       []*resourceapi.ResourceSlice{slice(HAMiCore.Name, "n1", 1, noUUID, oddCores)},
			wantProblems: []string{"device hami-gpu-4: no uuid attribute", "device hami-gpu-5: cores capacity is 200, want 100"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Inventory(tt.slices, ten)
			ds, cards := got.ForVendor("NVIDIA")
			if diff := cmp.Diff(tt.want, cards); diff != "" {
				t.Errorf("cards (-want +got):\n%s", diff)
			}
			var shared []bool
			for _, d := range ds {
				shared = append(shared, d.Shared)
			}
			if diff := cmp.Diff(tt.wantShared, shared); diff != "" {
				t.Errorf("shared (-want +got):\n%s", diff)
			}
			if len(got.Problems) != len(tt.wantProblems) {
				t.Fatalf("problems %q, want %q", got.Problems, tt.wantProblems)
			}
			for i, p := range tt.wantProblems {
				if !strings.Contains(got.Problems[i], p) {
					t.Errorf("problem %q, want it to say %q", got.Problems[i], p)
				}
			}
		})
	}
}

func TestUsage(t *testing.T) {
	nd := Inventory([]*resourceapi.ResourceSlice{slice(HAMiCore.Name, "n1", 1,
		hamiDevice(0, "GPU-a", 40*gib), hamiDevice(1, "GPU-b", 40*gib), hamiDevice(2, "GPU-c", 40*gib))}, ten)
	got := Usage(nd.Devices, map[DeviceKey]Consumption{
		{Driver: HAMiCore.Name, Pool: "n1", Device: "hami-gpu-0"}:    {Shares: 2, MemoryBytes: 3000*MiB + 1, Cores: 60},
		{Driver: HAMiCore.Name, Pool: "n1", Device: "hami-gpu-1"}:    {Whole: true},
		{Driver: HAMiCore.Name, Pool: "other", Device: "hami-gpu-2"}: {Shares: 1, MemoryBytes: MiB},
	})
	want := []devices.Usage{{Sharers: 2, MemoryMiB: 3001, Cores: 60}, {Sharers: 10, MemoryMiB: 40960, Cores: 100}, {}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
}

func TestNewClaim(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-p"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init"}},
			Containers:     []corev1.Container{{Name: "cuda"}},
		},
	}
	hami := Inventory([]*resourceapi.ResourceSlice{slice(HAMiCore.Name, "n1", 1, hamiDevice(0, "GPU-a", 40*gib), hamiDevice(1, "GPU-b", 40*gib))}, ten)
	t4 := Inventory([]*resourceapi.ResourceSlice{slice(NVIDIAGPU.Name, "n1", 1, nvidiaDevice(0, "GPU-t0", 15*gib, 0))}, ten)
	id := 0
	newShareID := func() types.UID { id++; return types.UID("share-" + string(rune('0'+id))) }
	resourceName := corev1.ResourceName("nvidia.com/gpu")

	got, err := NewClaim(pod, "n1", []Share{
		{Container: 1, Resource: resourceName, Grant: devices.Grant{UUID: "GPU-a", MemoryMiB: 3000, Cores: 30}, Device: hami.Devices[0]},
		{Container: 1, Resource: resourceName, Grant: devices.Grant{UUID: "GPU-b", MemoryMiB: 3000, Cores: 30}, Device: hami.Devices[1]},
		{Container: 0, Resource: resourceName, Grant: devices.Grant{UUID: "GPU-t0", MemoryMiB: 1000, Cores: 100}, Device: t4.Devices[0]},
	}, newShareID)
	if err != nil {
		t.Fatal(err)
	}
	c := got.Object
	if c.Namespace != "ns" || c.GenerateName != "p-hami-" || c.OwnerReferences[0].UID != "uid-p" || !*c.OwnerReferences[0].Controller ||
		c.Annotations[resourceapi.ExtendedResourceClaimAnnotation] != "true" {
		t.Errorf("claim metadata %+v: want it owned by the pod, generated from its name, marked as an extended resource claim", c.ObjectMeta)
	}
	var requests []string
	for _, r := range c.Spec.Devices.Requests {
		requests = append(requests, r.Name+" "+r.Exactly.DeviceClassName+" "+r.Exactly.Selectors[0].CEL.Expression+" "+capacityString(r.Exactly.Capacity))
	}
	wantRequests := []string{
		`container-1-card-0 hami-core-gpu.project-hami.io device.attributes["hami-core-gpu.project-hami.io"].uuid == "GPU-a" cores=30 memory=3000Mi`,
		`container-1-card-1 hami-core-gpu.project-hami.io device.attributes["hami-core-gpu.project-hami.io"].uuid == "GPU-b" cores=30 memory=3000Mi`,
		// Exclusive use on a driver that shares memory only: all of it.
		`container-0-card-0 gpu.nvidia.com device.attributes["gpu.nvidia.com"].uuid == "GPU-t0" memory=15Gi`,
	}
	if diff := cmp.Diff(wantRequests, requests); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	var results []string
	for _, r := range c.Status.Allocation.Devices.Results {
		results = append(results, r.Request+" "+r.Driver+"/"+r.Pool+"/"+r.Device+" "+string(*r.ShareID)+" "+quantities(r.ConsumedCapacity))
	}
	wantResults := []string{
		"container-1-card-0 hami-core-gpu.project-hami.io/n1/hami-gpu-0 share-1 cores=30 memory=3000Mi",
		"container-1-card-1 hami-core-gpu.project-hami.io/n1/hami-gpu-1 share-2 cores=30 memory=3000Mi",
		"container-0-card-0 gpu.nvidia.com/n1/gpu-0 share-3 memory=15Gi",
	}
	if diff := cmp.Diff(wantResults, results); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if nodes := c.Status.Allocation.NodeSelector.NodeSelectorTerms[0].MatchFields[0].Values; !cmp.Equal(nodes, []string{"n1"}) {
		t.Errorf("allocation for nodes %v, want n1", nodes)
	}
	if r := c.Status.ReservedFor; len(r) != 1 || r[0].UID != "uid-p" || r[0].Resource != "pods" {
		t.Errorf("reservedFor %+v, want the pod", r)
	}
	wantMappings := []corev1.ContainerExtendedResourceRequest{
		{ContainerName: "cuda", ResourceName: "nvidia.com/gpu", RequestName: "container-1-card-0"},
		{ContainerName: "cuda", ResourceName: "nvidia.com/gpu", RequestName: "container-1-card-1"},
		{ContainerName: "init", ResourceName: "nvidia.com/gpu", RequestName: "container-0-card-0"},
	}
	if diff := cmp.Diff(wantMappings, got.Mappings); diff != "" {
		t.Errorf("mappings (-want +got):\n%s", diff)
	}

	if _, err := NewClaim(pod, "n1", []Share{{Container: 5, Device: hami.Devices[0]}}, newShareID); err == nil {
		t.Error("a share of a container the pod lacks: no error")
	}
	if _, err := NewClaim(pod, "n1", []Share{{Container: 1, Grant: devices.Grant{MemoryMiB: 50000}, Device: hami.Devices[0]}}, newShareID); err == nil || !strings.Contains(err.Error(), "above the maximum") {
		t.Errorf("more memory than the card has: error %v, want it above the maximum", err)
	}
}

func TestConsume(t *testing.T) {
	q := func(s string) *resource.Quantity { return ptr.To(resource.MustParse(s)) }
	tests := []struct {
		name    string
		policy  *resourceapi.CapacityRequestPolicy
		n       int64
		want    int64
		wantErr bool
	}{
		{name: "no policy", n: 7, want: 7},
		{name: "rounded up to the step from the minimum", policy: &resourceapi.CapacityRequestPolicy{ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: q("2"), Step: q("4")}}, n: 7, want: 10},
		{name: "at least the minimum", policy: &resourceapi.CapacityRequestPolicy{ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: q("5")}}, n: 0, want: 5},
		{name: "above the maximum", policy: &resourceapi.CapacityRequestPolicy{ValidRange: &resourceapi.CapacityRequestPolicyRange{Max: q("8")}}, n: 9, wantErr: true},
		{name: "the smallest valid value that holds it", policy: &resourceapi.CapacityRequestPolicy{ValidValues: []resource.Quantity{resource.MustParse("16"), resource.MustParse("8"), resource.MustParse("4")}}, n: 5, want: 8},
		{name: "above every valid value", policy: &resourceapi.CapacityRequestPolicy{ValidValues: []resource.Quantity{resource.MustParse("4")}}, n: 5, wantErr: true},
		{name: "above the capacity", n: 101, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := consume(tt.policy, tt.n, 100)
			if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
				t.Errorf("consume(%d) = %d, %v; want %d, error %v", tt.n, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func capacityString(c *resourceapi.CapacityRequirements) string {
	if c == nil {
		return ""
	}
	return quantities(c.Requests)
}

func quantities(m map[resourceapi.QualifiedName]resource.Quantity) string {
	var parts []string
	for _, k := range []resourceapi.QualifiedName{"cores", "memory"} {
		if v, ok := m[k]; ok {
			parts = append(parts, string(k)+"="+v.String())
		}
	}
	return strings.Join(parts, " ")
}
