package simnode

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

const draTestNode = "dra-node"

// draPod is a pod on draTestNode whose container c0 uses the claim named
// in spec.resourceClaims as "gpu".
func draPod(name string, claim string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{
			NodeName:       draTestNode,
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To(claim)}},
			Containers:     []corev1.Container{{Name: "c0", Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}},
		},
	}
}

// draClaim is a claim allocated the devices (driver/pool/device, consumed
// capacity as "name=quantity") and reserved for the pods.
func draClaim(name string, reservedFor []*corev1.Pod, results ...resourceapi.DeviceRequestAllocationResult) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("claim-" + name)},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "c"},
		}}}},
	}
	if len(results) > 0 {
		c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}}
	}
	for _, p := range reservedFor {
		c.Status.ReservedFor = append(c.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: p.Name, UID: p.UID})
	}
	return c
}

// result is one allocation result of the request "gpu".
func result(driver, pool, device string, consumed ...string) resourceapi.DeviceRequestAllocationResult {
	r := resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: driver, Pool: pool, Device: device}
	for _, kv := range consumed {
		k, v, _ := strings.Cut(kv, "=")
		if r.ConsumedCapacity == nil {
			r.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{}
		}
		r.ConsumedCapacity[resourceapi.QualifiedName(k)] = resource.MustParse(v)
	}
	return r
}

// testDRAManager is draTestNode's kubelet DRA manager with the spec's
// driver registered (none for a device-plugin spec), on a fake API holding
// objs.
func testDRAManager(t *testing.T, spec string, objs ...runtime.Object) *draManager {
	t.Helper()
	s, err := ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset(objs...)
	m := newDRAManager(draTestNode, client.ResourceV1())
	if model := draModelOf(s); model != nil {
		d := &draDriver{model: model, node: draTestNode, client: client, allocatable: map[string]resourceapi.Device{}, prepared: map[types.UID][]PreparedDevice{}}
		for _, dev := range model.devices(draTestNode, s) {
			d.allocatable[dev.Name] = dev
		}
		m.driver = d
	}
	return m
}

const (
	hamiSpec   = "1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB, dra"
	nvidiaSpec = "1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB, dra nvidia"
)

// The kubelet prepares a pod's claims only once each is allocated and
// reserved for the pod, through the driver its node registered; the
// driver refuses devices it does not publish; the simulation refuses what
// no driver checks; a container gets what the driver's source gives it.
func TestPrepareResources(t *testing.T) {
	p := draPod("p", "c")
	tests := []struct {
		name    string
		spec    string
		pod     *corev1.Pod
		objs    []runtime.Object
		wantErr string
		// violation: the error is the simulation's own.
		violation bool
		want      map[string][]PreparedDevice
	}{
		{name: "HAMi: allocated and reserved: hami-core limits from the consumed capacity", spec: hamiSpec, pod: p,
			objs: []runtime.Object{draClaim("c", []*corev1.Pod{p}, result(HAMiDRADriver, draTestNode, "hami-gpu-1", "memory=10Gi", "cores=30"))},
			want: map[string][]PreparedDevice{"c0": {{Claim: "ns/c", Request: "gpu", Driver: HAMiDRADriver, Pool: draTestNode, Device: "hami-gpu-1",
				UUID: CardUUID(draTestNode, 1), MemoryMiB: 10240, Cores: 30, Enforced: true,
				Env: []string{"CUDA_DEVICE_SM_LIMIT_0=30", "CUDA_DEVICE_MEMORY_LIMIT_0=10240m"}}}}},
		{name: "HAMi: no cores consumed: the driver's 60", spec: hamiSpec, pod: p,
			objs: []runtime.Object{draClaim("c", []*corev1.Pod{p}, result(HAMiDRADriver, draTestNode, "hami-gpu-0", "memory=1Gi"))},
			want: map[string][]PreparedDevice{"c0": {{Claim: "ns/c", Request: "gpu", Driver: HAMiDRADriver, Pool: draTestNode, Device: "hami-gpu-0",
				UUID: CardUUID(draTestNode, 0), MemoryMiB: 1024, Cores: 60, Enforced: true,
				Env: []string{"CUDA_DEVICE_SM_LIMIT_0=60", "CUDA_DEVICE_MEMORY_LIMIT_0=1024m"}}}}},
		{name: "NVIDIA: the consumed memory, not enforced", spec: nvidiaSpec, pod: p,
			objs: []runtime.Object{draClaim("c", []*corev1.Pod{p}, result(NVIDIADRADriver, draTestNode, "gpu-0", "memory=8Gi"))},
			want: map[string][]PreparedDevice{"c0": {{Claim: "ns/c", Request: "gpu", Driver: NVIDIADRADriver, Pool: draTestNode, Device: "gpu-0",
				UUID: CardUUID(draTestNode, 0), MemoryMiB: 8192}}}},
		{name: "not reserved for the pod", spec: hamiSpec, pod: p,
			objs:    []runtime.Object{draClaim("c", nil, result(HAMiDRADriver, draTestNode, "hami-gpu-0"))},
			wantErr: "pod p (uid-p) is not allowed to use ResourceClaim c (claim-c)"},
		{name: "reserved, not allocated", spec: hamiSpec, pod: p,
			objs: []runtime.Object{draClaim("c", []*corev1.Pod{p})}, wantErr: "ResourceClaim c: not allocated"},
		{name: "the claim does not exist", spec: hamiSpec, pod: p, wantErr: `fetch ResourceClaim c: resourceclaims.resource.k8s.io "c" not found`},
		{name: "a template claim not yet created", spec: hamiSpec,
			pod: func() *corev1.Pod {
				q := p.DeepCopy()
				q.Spec.ResourceClaims[0] = corev1.PodResourceClaim{Name: "gpu", ResourceClaimTemplateName: ptr.To("t")}
				return q
			}(),
			wantErr: `pod "ns/p": ResourceClaim not created yet`},
		{name: "a template claim not owned by the pod", spec: hamiSpec,
			pod: func() *corev1.Pod {
				q := p.DeepCopy()
				q.Spec.ResourceClaims[0] = corev1.PodResourceClaim{Name: "gpu", ResourceClaimTemplateName: ptr.To("t")}
				q.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptr.To("c")}}
				return q
			}(),
			objs:    []runtime.Object{draClaim("c", []*corev1.Pod{p}, result(HAMiDRADriver, draTestNode, "hami-gpu-0"))},
			wantErr: "ResourceClaim ns/c was not created for Pod ns/p (Pod is not owner)"},
		{name: "a device-plugin node registers no DRA driver", spec: "1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB", pod: p,
			objs:    []runtime.Object{draClaim("c", []*corev1.Pod{p}, result(HAMiDRADriver, draTestNode, "hami-gpu-0"))},
			wantErr: "DRA driver hami-core-gpu.project-hami.io is not registered"},
		{name: "HAMi: a device the node does not publish", spec: hamiSpec, pod: p,
			objs:    []runtime.Object{draClaim("c", []*corev1.Pod{p}, result(HAMiDRADriver, draTestNode, "hami-gpu-9"))},
			wantErr: "NodePrepareResources failed for ResourceClaim c: error preparing devices for claim ns/c:claim-c: prepare devices failed: requested device is not allocatable: hami-gpu-9"},
		{name: "NVIDIA: a device the node does not publish", spec: nvidiaSpec, pod: p,
			objs:    []runtime.Object{draClaim("c", []*corev1.Pod{p}, result(NVIDIADRADriver, draTestNode, "gpu-9"))},
			wantErr: `allocatable not found for device "gpu-9"`},
		{name: "another node's pool", spec: hamiSpec, pod: p, violation: true,
			objs:    []runtime.Object{draClaim("c", []*corev1.Pod{p}, result(HAMiDRADriver, "other-node", "hami-gpu-0"))},
			wantErr: "simulated node check: claim ns/c: device hami-gpu-0 of pool other-node allocated on node dra-node"},
		{name: "consumed beyond the device's capacity", spec: hamiSpec, pod: p, violation: true,
			objs:    []runtime.Object{draClaim("c", []*corev1.Pod{p}, result(HAMiDRADriver, draTestNode, "hami-gpu-0", "memory=41Gi"))},
			wantErr: "device hami-gpu-0: consumed memory 41Gi, beyond its capacity 40Gi"},
		{name: "consumed a capacity the device has not", spec: nvidiaSpec, pod: p, violation: true,
			objs:    []runtime.Object{draClaim("c", []*corev1.Pod{p}, result(NVIDIADRADriver, draTestNode, "gpu-0", "cores=10"))},
			wantErr: "device gpu-0 has no capacity cores"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := testDRAManager(t, tt.spec, tt.objs...)
			err := m.prepareResources(context.Background(), tt.pod)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				var v *ViolationError
				if errors.As(err, &v) != tt.violation {
					t.Errorf("error %v: a simulation check: %v, want %v", err, !tt.violation, tt.violation)
				}
				if got := m.containerDevices(tt.pod); len(got) != 0 {
					t.Errorf("a failed prepare left devices %v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, m.containerDevices(tt.pod), cmpopts.IgnoreUnexported(PreparedDevice{})); diff != "" {
				t.Errorf("container devices (-want +got):\n%s", diff)
			}
		})
	}
}

// Claims on one device add up: the second claim beyond the card is
// refused, a claim shared by two pods is prepared once, and a claim
// unprepared with its last pod frees its share.
func TestPrepareResourcesAcrossClaims(t *testing.T) {
	a, b, c := draPod("a", "big"), draPod("b", "more"), draPod("c", "big")
	big := draClaim("big", []*corev1.Pod{a, c}, result(HAMiDRADriver, draTestNode, "hami-gpu-0", "memory=30Gi", "cores=50"))
	more := draClaim("more", []*corev1.Pod{b}, result(HAMiDRADriver, draTestNode, "hami-gpu-0", "memory=20Gi", "cores=50"))
	m := testDRAManager(t, hamiSpec, big, more)
	ctx := context.Background()
	if err := m.prepareResources(ctx, a); err != nil {
		t.Fatal(err)
	}
	err := m.prepareResources(ctx, b)
	var v *ViolationError
	if !errors.As(err, &v) || !strings.Contains(err.Error(), "device hami-gpu-0 over-committed: memory 50Gi consumed") {
		t.Fatalf("second claim: %v, want an over-commit violation", err)
	}
	// The shared claim is prepared already: no second NodePrepareResources
	// (HAMi's driver would refuse one).
	if err := m.prepareResources(ctx, c); err != nil {
		t.Fatalf("pod sharing the claim: %v", err)
	}
	m.unprepareResources(a.UID)
	if err := m.prepareResources(ctx, b); err == nil {
		t.Fatal("the shared claim's other pod still runs: want the over-commit refused again")
	}
	m.unprepareResources(c.UID)
	if err := m.prepareResources(ctx, b); err != nil {
		t.Fatalf("after the shared claim's pods ended: %v", err)
	}
}

// A pod's sync that resolved its claims before the pod ended prepares
// nothing once its claims were unprepared (the kubelet's pod worker runs
// the two one after the other): the claim would otherwise stay prepared
// for a pod that is gone and count against the device for ever.
func TestNoPrepareAfterThePodEnded(t *testing.T) {
	a, b := draPod("a", "first"), draPod("b", "second")
	first := draClaim("first", []*corev1.Pod{a}, result(HAMiDRADriver, draTestNode, "hami-gpu-0", "memory=30Gi", "cores=50"))
	second := draClaim("second", []*corev1.Pod{b}, result(HAMiDRADriver, draTestNode, "hami-gpu-0", "memory=30Gi", "cores=50"))
	m := testDRAManager(t, hamiSpec, first, second)
	ctx := context.Background()
	m.unprepareResources(a.UID)
	if err := m.prepareResources(ctx, a); err == nil || !strings.Contains(err.Error(), "has ended") {
		t.Fatalf("prepare for the ended pod: %v, want it refused", err)
	}
	if err := m.prepareResources(ctx, b); err != nil {
		t.Fatalf("the device's next claim: %v (the ended pod's claim counted)", err)
	}
}

// kube-scheduler's claim for extended resources (DRAExtendedResource) is
// prepared with the pod's own and reaches the containers its request
// mappings name.
func TestPrepareExtendedResourceClaim(t *testing.T) {
	p := draPod("p", "own")
	p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "c1"})
	p.Status.ExtendedResourceClaimStatus = &corev1.PodExtendedResourceClaimStatus{
		ResourceClaimName: "p-extended-resources-x",
		RequestMappings:   []corev1.ContainerExtendedResourceRequest{{ContainerName: "c1", ResourceName: "nvidia.com/gpu", RequestName: "container-1-request-0"}},
	}
	own := draClaim("own", []*corev1.Pod{p}, result(HAMiDRADriver, draTestNode, "hami-gpu-0", "memory=1Gi", "cores=10"))
	ext := draClaim("p-extended-resources-x", []*corev1.Pod{p}, result(HAMiDRADriver, draTestNode, "hami-gpu-1", "memory=40Gi", "cores=100"))
	ext.Status.Allocation.Devices.Results[0].Request = "container-1-request-0"
	m := testDRAManager(t, hamiSpec, own, ext)
	if err := m.prepareResources(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	got := m.containerDevices(p)
	if len(got["c0"]) != 1 || got["c0"][0].Device != "hami-gpu-0" || len(got["c1"]) != 1 || got["c1"][0].Device != "hami-gpu-1" || got["c1"][0].MemoryMiB != 40960 {
		t.Errorf("container devices %+v: want c0 on hami-gpu-0, c1 on all of hami-gpu-1", got)
	}
	// The device manager leaves the mapped resource to DRA.
	if !draBacked(p, "c1", "nvidia.com/gpu") || draBacked(p, "c0", "nvidia.com/gpu") {
		t.Errorf("draBacked: want nvidia.com/gpu of c1 only")
	}
}

// hygonTestUUID is the serial of card 0 of draTestNode.
var hygonTestUUID = strings.ToUpper(cardID("HY", draTestNode, 0))

// Hygon's driver makes a vHCU of the capacity the claim's spec asks, or
// hands the whole card; Ascend's puts the quota of the first result into
// the first device's environment.
func TestPrepareVendorModels(t *testing.T) {
	tests := []struct {
		name  string
		spec  string
		claim func() *resourceapi.ResourceClaim
		want  []PreparedDevice
	}{
		{name: "Hygon: a vHCU of the cores and memory asked", spec: "1 node x 1 card of Hygon DCU Z100 32 GiB, cores 60, dra",
			claim: func() *resourceapi.ResourceClaim {
				c := draClaim("c", nil, result(HygonDRADriver, draTestNode, "hcu-0000-01-00-0", "cores=15", "memory=8Gi", "slices=1"))
				c.Spec.Devices.Requests[0].Exactly.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{
					"cores": resource.MustParse("15"), "memory": resource.MustParse("8Gi")}}
				return c
			},
			want: []PreparedDevice{{Claim: "ns/c", Request: "gpu", Driver: HygonDRADriver, Pool: draTestNode, Device: "hcu-0000-01-00-0",
				UUID: hygonTestUUID, MemoryMiB: 8192, Cores: 15, Enforced: true}}},
		{name: "Hygon: nothing asked: the whole card", spec: "1 node x 1 card of Hygon DCU Z100 32 GiB, cores 60, dra",
			claim: func() *resourceapi.ResourceClaim {
				return draClaim("c", nil, result(HygonDRADriver, draTestNode, "hcu-0000-01-00-0", "cores=60", "memory=32Gi", "slices=1"))
			},
			want: []PreparedDevice{{Claim: "ns/c", Request: "gpu", Driver: HygonDRADriver, Pool: draTestNode, Device: "hcu-0000-01-00-0",
				UUID: hygonTestUUID, MemoryMiB: 32768, Cores: 60}}},
		{name: "Ascend: the quota on the first device", spec: "1 node x 2 cards of Ascend910B4 32 GiB, dra",
			claim: func() *resourceapi.ResourceClaim {
				return draClaim("c", nil, result(AscendDRADriver, draTestNode, "npu-1-0", "cores=40", "memory=4Gi"),
					result(AscendDRADriver, draTestNode, "npu-0-0", "cores=40", "memory=4Gi"))
			},
			want: []PreparedDevice{
				{Claim: "ns/c", Request: "gpu", Driver: AscendDRADriver, Pool: draTestNode, Device: "npu-1-0", UUID: draTestNode + "-1",
					MemoryMiB: 4096, Cores: 40, Enforced: true, Env: []string{"ASCEND_VISIBLE_DEVICES=1,0", "NPU_MEM_QUOTA=4096", "NPU_PRIORITY=40"}},
				{Claim: "ns/c", Request: "gpu", Driver: AscendDRADriver, Pool: draTestNode, Device: "npu-0-0", UUID: draTestNode + "-0",
					MemoryMiB: 4096, Cores: 40, Enforced: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseSpec(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			m := draModelOf(s)
			allocatable := map[string]resourceapi.Device{}
			for _, d := range m.devices(draTestNode, s) {
				allocatable[d.Name] = d
			}
			got, err := m.prepare(tt.claim(), allocatable)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreUnexported(PreparedDevice{})); diff != "" {
				t.Errorf("prepared (-want +got):\n%s", diff)
			}
		})
	}
}

// A driver asked again for a claim it prepared: HAMi's refuses (its
// checkpoint has it in PrepareCompleted under HAMiCoreSupport), NVIDIA's
// returns what it prepared.
func TestDriverPreparesAClaimOnce(t *testing.T) {
	tests := []struct {
		spec, driver, device, wantErr string
	}{
		{spec: hamiSpec, driver: HAMiDRADriver, device: "hami-gpu-0", wantErr: "claims in PrepareCompleted state are not supported when HAMiCoreSupport enabled"},
		{spec: nvidiaSpec, driver: NVIDIADRADriver, device: "gpu-0"},
	}
	for _, tt := range tests {
		t.Run(tt.driver, func(t *testing.T) {
			claim := draClaim("c", nil, result(tt.driver, draTestNode, tt.device))
			m := testDRAManager(t, tt.spec, claim)
			ref := []claimRef{{namespace: "ns", name: "c", uid: claim.UID}}
			for i := range 2 {
				got, failures, err := m.driver.nodePrepareResources(context.Background(), ref)
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 || tt.wantErr == "" {
					if failures[claim.UID] != nil || len(got[claim.UID]) != 1 {
						t.Errorf("prepare %d: %v, %v: want the device", i+1, got, failures)
					}
					continue
				}
				if err := failures[claim.UID]; err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("second prepare: %v, want %q", err, tt.wantErr)
				}
			}
		})
	}
}
