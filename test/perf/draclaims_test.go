package perf

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/internal/allocation"
)

func TestDRANodes(t *testing.T) {
	names := []string{"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"}
	tests := []struct {
		percent int
		want    []string
	}{
		{percent: 0},
		{percent: 50, want: []string{"n1", "n3", "n5", "n7"}},
		{percent: 25, want: []string{"n3", "n7"}},
		{percent: 100, want: names},
	}
	for _, tt := range tests {
		got := draNodes(names, tt.percent)
		var list []string
		for _, n := range names {
			if got[n] {
				list = append(list, n)
			}
		}
		if !slices.Equal(list, tt.want) {
			t.Errorf("draNodes(%d%%) = %v, want %v", tt.percent, list, tt.want)
		}
	}
}

// hamiSlice is a node's slice of HAMi's DRA driver: cards of 40 GiB and
// 100 cores.
func hamiSlice(node string, cards ...string) resourceapi.ResourceSlice {
	s := resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{Driver: "hami-core-gpu.project-hami.io", NodeName: ptr.To(node),
		Pool: resourceapi.ResourcePool{Name: node}}}
	for _, c := range cards {
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: c, Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			draMemory: {Value: resource.MustParse("40Gi")}, draCores: {Value: resource.MustParse("100")},
		}})
	}
	return s
}

// allocated is a claim allocated the results, each "pool/device" with
// the consumed memory and cores ("" for none recorded), reserved for the
// pods' UIDs.
func allocated(name string, reservedFor []string, results ...[3]string) resourceapi.ResourceClaim {
	c := resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	alloc := &resourceapi.AllocationResult{}
	for _, r := range results {
		pool, device, _ := strings.Cut(r[0], "/")
		res := resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: "hami-core-gpu.project-hami.io", Pool: pool, Device: device}
		if r[1] != "" {
			res.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{draMemory: resource.MustParse(r[1]), draCores: resource.MustParse(r[2])}
		}
		alloc.Devices.Results = append(alloc.Devices.Results, res)
	}
	if len(results) > 0 {
		c.Status.Allocation = alloc
	}
	for _, uid := range reservedFor {
		c.Status.ReservedFor = append(c.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: uid, UID: types.UID(uid)})
	}
	return c
}

func TestDRACards(t *testing.T) {
	published := []resourceapi.ResourceSlice{hamiSlice("a", "gpu-0", "gpu-1"), hamiSlice("b", "gpu-0")}
	tests := []struct {
		name   string
		claims []resourceapi.ResourceClaim
		// want: used cards as "node/card sharers memory cores".
		want         []string
		wantProblems int
	}{
		{name: "no claim"},
		{
			name: "a card two claims share counts once, with both consumptions",
			claims: []resourceapi.ResourceClaim{
				allocated("c1", nil, [3]string{"a/gpu-0", "4Gi", "30"}),
				allocated("c2", nil, [3]string{"a/gpu-0", "8Gi", "20"}),
			},
			want: []string{"a/gpu-0 2 12288 50"},
		},
		{
			name:   "a claim of two cards counts both; no consumed capacity takes the card",
			claims: []resourceapi.ResourceClaim{allocated("c1", nil, [3]string{"a/gpu-1", "", ""}, [3]string{"b/gpu-0", "1Gi", "0"})},
			want:   []string{"a/gpu-1 1 40960 100", "b/gpu-0 1 1024 0"},
		},
		{
			name:   "a claim not allocated holds nothing",
			claims: []resourceapi.ResourceClaim{allocated("c1", nil)},
		},
		{
			name:         "a device no slice publishes",
			claims:       []resourceapi.ResourceClaim{allocated("c1", nil, [3]string{"c/gpu-0", "1Gi", "10"})},
			wantProblems: 1,
		},
		{
			name: "a card over-committed",
			claims: []resourceapi.ResourceClaim{
				allocated("c1", nil, [3]string{"b/gpu-0", "30Gi", "10"}),
				allocated("c2", nil, [3]string{"b/gpu-0", "20Gi", "10"}),
			},
			want:         []string{"b/gpu-0 2 51200 20"},
			wantProblems: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cards, problems := draCards(published, tt.claims)
			if len(cards) != 3 {
				t.Fatalf("%d cards, want the 3 published", len(cards))
			}
			var used []string
			for _, c := range cards {
				if c.Used.Sharers > 0 {
					used = append(used, strings.Join([]string{c.Node + "/" + c.UUID, strconv.Itoa(int(c.Used.Sharers)), strconv.FormatInt(c.Used.MemoryMiB, 10), strconv.FormatInt(c.Used.Cores, 10)}, " "))
				}
			}
			if !slices.Equal(used, tt.want) || len(problems) != tt.wantProblems || usedCards(cards) != len(tt.want) {
				t.Errorf("used %v, problems %v; want %v and %d problems", used, problems, tt.want, tt.wantProblems)
			}
		})
	}
}

func TestCheckClaims(t *testing.T) {
	pod := func(name, node string, phase corev1.PodPhase, claim string) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name)},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
		if claim != "" {
			p.Status.ExtendedResourceClaimStatus = &corev1.PodExtendedResourceClaimStatus{ResourceClaimName: claim}
		}
		return p
	}
	claims := []resourceapi.ResourceClaim{
		allocated("ok", []string{"p"}, [3]string{"a/gpu-0", "1Gi", "0"}),
		allocated("unreserved", nil, [3]string{"a/gpu-0", "1Gi", "0"}),
		allocated("pending", []string{"p"}),
		allocated("elsewhere", []string{"p"}, [3]string{"b/gpu-0", "1Gi", "0"}),
	}
	dra := map[string]bool{"a": true}
	tests := []struct {
		name                  string
		pod                   corev1.Pod
		wantOnDRA, wantOK     int
		wantProblemContaining string
	}{
		{name: "allocated and reserved", pod: pod("p", "a", corev1.PodRunning, "ok"), wantOnDRA: 1, wantOK: 1},
		{name: "not reserved for the pod", pod: pod("p", "a", corev1.PodRunning, "unreserved"), wantOnDRA: 1, wantProblemContaining: "not reserved"},
		{name: "not allocated", pod: pod("p", "a", corev1.PodRunning, "pending"), wantOnDRA: 1, wantProblemContaining: "not allocated"},
		{name: "another node's device", pod: pod("p", "a", corev1.PodRunning, "elsewhere"), wantOnDRA: 1, wantProblemContaining: "another node's pool"},
		{name: "no claim", pod: pod("p", "a", corev1.PodRunning, ""), wantOnDRA: 1, wantProblemContaining: "without a claim"},
		{name: "claim gone", pod: pod("p", "a", corev1.PodRunning, "gone"), wantOnDRA: 1, wantProblemContaining: "not found"},
		{name: "device-plugin node", pod: pod("p", "b", corev1.PodRunning, "")},
		{name: "not running", pod: pod("p", "a", corev1.PodPending, "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			onDRA, ok, problems := checkClaims([]corev1.Pod{tt.pod}, dra, claims)
			if onDRA != tt.wantOnDRA || ok != tt.wantOK || (tt.wantProblemContaining == "") != (len(problems) == 0) ||
				(len(problems) > 0 && !strings.Contains(problems[0], tt.wantProblemContaining)) {
				t.Errorf("checkClaims = %d, %d, %v; want %d, %d, a problem containing %q", onDRA, ok, problems, tt.wantOnDRA, tt.wantOK, tt.wantProblemContaining)
			}
		})
	}
}

func TestPodClaims(t *testing.T) {
	p := &corev1.Pod{
		Spec: corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{
			{Name: "direct", ResourceClaimName: ptr.To("hami-dra-claim")},
			{Name: "templated", ResourceClaimTemplateName: ptr.To("t")},
		}},
		Status: corev1.PodStatus{
			ResourceClaimStatuses:       []corev1.PodResourceClaimStatus{{Name: "templated", ResourceClaimName: ptr.To("p-templated-x")}},
			ExtendedResourceClaimStatus: &corev1.PodExtendedResourceClaimStatus{ResourceClaimName: "p-extended"},
		},
	}
	if got, want := podClaims(p), []string{"hami-dra-claim", "p-templated-x", "p-extended"}; !slices.Equal(got, want) {
		t.Errorf("podClaims = %v, want %v", got, want)
	}
}

// A DRA card's sharers are not held against the device-plugin cards'
// split: 30 pods of 1 GiB on one DRA card need one card, not three.
func TestFractionalPackingDRACards(t *testing.T) {
	card := func(node string, split int32, sharers int32, memory int64) allocation.CardUse {
		c := allocation.CardUse{Node: node, CoreTotal: 100, Used: devices.Usage{Sharers: sharers, MemoryMiB: memory}}
		c.Split, c.MemoryMiB, c.Cores = split, 40960, 100
		return c
	}
	cards := []allocation.CardUse{card("dp", 10, 0, 0), card("dp", 10, 0, 0), card("dra", 0, 30, 30*1024), card("dra", 0, 0, 0)}
	p := fractionalPacking(cards, []corev1.PodSpec{{Containers: []corev1.Container{container(gpuRequest{cards: 1, memory: 1024})}}})
	if p.Cards != 1 || p.MinCards != 1 || p.Nodes != 1 || p.MinNodes != 1 {
		t.Errorf("packing %+v: want 1 card and 1 node, bounds 1 and 1", p)
	}
}
