package simnode

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// SimulatedLabel marks the nodes this package builds; an Agent serves the
// nodes that carry it.
const SimulatedLabel = "sim.hami.io/gpu-node"

// registeredCard is one card of the register annotation, in the field order
// and with the omitempty rules of HAMi's device plugin (device.DeviceInfo).
type registeredCard struct {
	ID      string `json:"id,omitempty"`
	Index   uint   `json:"index,omitempty"`
	Count   int32  `json:"count,omitempty"`
	Devmem  int32  `json:"devmem,omitempty"`
	Devcore int32  `json:"devcore,omitempty"`
	Type    string `json:"type,omitempty"`
	Numa    int    `json:"numa,omitempty"`
	Mode    string `json:"mode,omitempty"`
	// MIGProfiles: mig mode only; the inner keys are always written.
	MIGProfiles []migProfile `json:"migProfiles,omitempty"`
	Health      bool         `json:"health,omitempty"`
	// CustomInfo: vendor details (Vastai's DeviceStrategy and AIC).
	CustomInfo map[string]any `json:"custominfo,omitempty"`
}

// migProfile is one element of a card's migProfiles (HAMi's
// device.MigProfile).
type migProfile struct {
	Name       string                 `json:"name"`
	MemoryMB   int32                  `json:"memoryMB"`
	Core       int32                  `json:"core"`
	SliceCount uint32                 `json:"sliceCount"`
	Placements []devices.MIGPlacement `json:"placements"`
}

// ChartMIGAllowlist is the migProfileAllowlist of HAMi v2.10's chart
// (charts/hami/templates/scheduler/device-configmap.yaml), for the models
// migFacts knows.
var ChartMIGAllowlist = []devices.MIGProfileAllow{
	{Models: []string{"A100-SXM4-40GB", "A100-40GB-PCIe", "A100-PCIE-40GB"}, Profiles: []string{"1g.5gb", "2g.10gb", "3g.20gb", "7g.40gb"}},
}

// giProfile is what NVML reports of one GPU instance profile
// (nvmlGpuInstanceProfileInfo_t and nvmlDeviceGetGpuInstancePossiblePlacements).
type giProfile struct {
	sliceCount    uint32
	memoryMiB     int32
	sms           int32
	instanceCount int32
	placements    []devices.MIGPlacement
}

func pl(start, size uint32) devices.MIGPlacement {
	return devices.MIGPlacement{Start: start, Size: size}
}

// migFacts are the GPU instance profiles NVML reports per MIG-capable
// model (matched as a substring of the NVML name), as `nvidia-smi mig
// -lgip` and -lgipp list them on the card. A100-SXM4-40GB (and the 40GB
// PCIe): 108 SMs, 8 memory slices of ~5 GB; the 7-slice instance has 98
// SMs; 1g.5gb 4864 MiB (4.75 GiB) x7, 2g.10gb 9856 MiB (9.62 GiB) x3,
// 3g.20gb 19968 MiB (19.50 GiB) x2, 4g.20gb 19968 MiB x1, 7g.40gb
// 40192 MiB (39.25 GiB) x1.
var migFacts = []struct {
	models   []string
	profiles []giProfile
}{{
	models: []string{"A100-SXM4-40GB", "A100-40GB-PCIe", "A100-PCIE-40GB"},
	profiles: []giProfile{
		{sliceCount: 1, memoryMiB: 4864, sms: 14, instanceCount: 7, placements: []devices.MIGPlacement{pl(0, 1), pl(1, 1), pl(2, 1), pl(3, 1), pl(4, 1), pl(5, 1), pl(6, 1)}},
		{sliceCount: 2, memoryMiB: 9856, sms: 28, instanceCount: 3, placements: []devices.MIGPlacement{pl(0, 2), pl(2, 2), pl(4, 2)}},
		{sliceCount: 3, memoryMiB: 19968, sms: 42, instanceCount: 2, placements: []devices.MIGPlacement{pl(0, 4), pl(4, 4)}},
		{sliceCount: 4, memoryMiB: 19968, sms: 56, instanceCount: 1, placements: []devices.MIGPlacement{pl(0, 4)}},
		{sliceCount: 7, memoryMiB: 40192, sms: 98, instanceCount: 1, placements: []devices.MIGPlacement{pl(0, 8)}},
	},
}}

// registeredMIGProfile is a migProfiles entry with the instance count the
// device plugin derives the card's count from.
type registeredMIGProfile struct {
	migProfile
	instanceCount int32
}

// MIGProfiles returns the migProfiles HAMi's device plugin registers for a
// card of the NVML model in mig mode: the profiles of the first allowlist
// entry (nil: ChartMIGAllowlist) one of whose models is a substring of the
// name, each mapped by its "<n>g" prefix to the GPU instance profile of n
// slices, with NVML's memory and placements and core = ceil(SMs x 100 /
// SMs of the largest instance profile). Profiles NVML cannot describe are
// skipped; none left is an error.
func MIGProfiles(model string, allow []devices.MIGProfileAllow) ([]registeredMIGProfile, error) {
	if allow == nil {
		allow = ChartMIGAllowlist
	}
	var names []string
	for _, a := range allow {
		if containsAny(model, a.Models) {
			names = a.Profiles
			break
		}
	}
	if names == nil {
		return nil, fmt.Errorf("mig: no migProfileAllowlist entry names model %q", model)
	}
	var facts []giProfile
	for _, f := range migFacts {
		if containsAny(model, f.models) {
			facts = f.profiles
			break
		}
	}
	var largest int32
	for _, f := range facts {
		largest = max(largest, f.sms)
	}
	var out []registeredMIGProfile
	for _, name := range names {
		prefix, _, _ := strings.Cut(name, ".")
		slices, err := strconv.ParseUint(strings.TrimSuffix(prefix, "g"), 10, 32)
		if err != nil || !strings.HasSuffix(prefix, "g") {
			continue
		}
		for _, f := range facts {
			if f.sliceCount != uint32(slices) {
				continue
			}
			out = append(out, registeredMIGProfile{
				migProfile: migProfile{
					Name: name, MemoryMB: f.memoryMiB, Core: (f.sms*100 + largest - 1) / largest,
					SliceCount: f.sliceCount, Placements: f.placements,
				},
				instanceCount: f.instanceCount,
			})
			break
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("mig: no MIG profile of model %q is known to the simulation", model)
	}
	return out, nil
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if sub != "" && strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// largestInstanceCount is the count a mig card registers.
func largestInstanceCount(profiles []registeredMIGProfile) int32 {
	var n int32
	for _, p := range profiles {
		n = max(n, p.instanceCount)
	}
	return n
}

// CardUUID is the stable UUID of card i of a simulated node, shaped like an
// NVML UUID (GPU-8-4-4-4-12 hex digits).
func CardUUID(node string, i int) string {
	sum := sha256.Sum256([]byte(node + "/" + strconv.Itoa(i)))
	h := fmt.Sprintf("%x", sum[:16])
	return "GPU-" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// CardType is the type HAMi's device plugin registers for an NVML model
// name: the name itself when it starts with NVIDIA, else "NVIDIA-" and the
// name (HAMi >= v2.8, e.g. "Tesla T4" -> "NVIDIA-Tesla T4").
func CardType(model string) string {
	if strings.HasPrefix(model, "NVIDIA") {
		return model
	}
	return "NVIDIA-" + model
}

// RegisterAnnotation is the hami.io/node-nvidia-register value HAMi's
// device plugin writes for a node of the spec: a JSON array, one object per
// card. The first half of the cards sit on NUMA node 0, the rest on 1.
//
// A mig spec registers every card in mig mode with its MIG profiles (see
// MIGProfiles), devmem unscaled, devcore 100 and the largest instance
// count as its count; a model without profiles then registers no card.
func RegisterAnnotation(node string, s Spec) string {
	var profiles []migProfile
	mode, count, cores := devices.ModeHAMiCore, s.Split, s.Cores
	if s.MIG {
		registered, _ := MIGProfiles(s.Model, nil)
		for _, p := range registered {
			profiles = append(profiles, p.migProfile)
		}
		mode, count, cores = devices.ModeMIG, largestInstanceCount(registered), 100
	}
	cards := make([]registeredCard, s.Cards)
	for i := range cards {
		numa := 0
		if s.Cards > 1 {
			numa = i * 2 / s.Cards
		}
		cards[i] = registeredCard{
			ID: CardUUID(node, i), Index: uint(i), Count: count, Devmem: s.MemoryMiB, Devcore: cores,
			Type: CardType(s.Model), Numa: numa, Mode: mode, MIGProfiles: profiles, Health: true,
		}
	}
	if s.MIG && len(profiles) == 0 {
		// HAMi's device plugin skips a mig card without profiles.
		cards = cards[:0]
	}
	// Marshalling plain structs of strings and numbers cannot fail.
	data, _ := json.Marshal(cards)
	return string(data)
}

// Build builds the spec's nodes, named prefix-first, prefix-(first+1), ...:
// Ready, with what the vendor's device plugin puts on its Node (for
// NVIDIA the register annotation and nvidia.com/gpu capacity and
// allocatable of cards x split; see ParseSpec for the others), or for a
// DRA spec only DRADriverLabel; every node carries the spec in
// SpecAnnotation. Callers may add labels or taints before creating them.
func (s Spec) Build(prefix string, first int) []*corev1.Node {
	nodes := make([]*corev1.Node, 0, s.Nodes)
	for i := range s.Nodes {
		nodes = append(nodes, s.node(fmt.Sprintf("%s-%d", prefix, first+i), first+i))
	}
	return nodes
}

// AddTo adds the spec's cards (its vendor's annotations, labels and
// capacity) to a node built from another spec, for nodes with cards of
// two vendors. The spec's node count is not used.
func (s Spec) AddTo(n *corev1.Node) {
	makeNodeMaps(n)
	kindOf(s).inventory(n, s)
}

// makeNodeMaps makes the node's annotations, labels, capacity and
// allocatable where they are nil.
func makeNodeMaps(n *corev1.Node) {
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	if n.Status.Capacity == nil {
		n.Status.Capacity = corev1.ResourceList{}
	}
	if n.Status.Allocatable == nil {
		n.Status.Allocatable = corev1.ResourceList{}
	}
}

func (s Spec) node(name string, ordinal int) *corev1.Node {
	resources := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("64"),
		corev1.ResourceMemory:           resource.MustParse("512Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
		corev1.ResourcePods:             resource.MustParse("256"),
	}
	now := metav1.Now()
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				corev1.LabelHostname:   name,
				corev1.LabelOSStable:   "linux",
				corev1.LabelArchStable: "amd64",
				"gpu":                  "on",
				SimulatedLabel:         "true",
			},
			Annotations: map[string]string{},
		},
		Status: corev1.NodeStatus{
			Capacity:    resources,
			Allocatable: resources.DeepCopy(),
			Phase:       corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				Message: "simulated kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now,
			}},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.%d.%d.%d", 64+(ordinal>>16)&63, (ordinal>>8)&255, ordinal&255)},
				{Type: corev1.NodeHostName, Address: name},
			},
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion: "v1.37.2", OperatingSystem: "linux", Architecture: "amd64",
				ContainerRuntimeVersion: "simulated://1.0", OSImage: "hami-scheduler simulated node",
			},
		},
	}
	n.Annotations[SpecAnnotation] = s.String()
	s.inventory(n)
	return n
}

// inventory writes the spec's cards onto the node: the vendor's device
// plugin registration and resources, or, on a DRA node, the label naming
// its driver (its devices are in the ResourceSlices the agent publishes).
func (s Spec) inventory(n *corev1.Node) {
	if s.DRA != "" {
		n.Labels[DRADriverLabel] = s.DRA
		return
	}
	kindOf(s).inventory(n, s)
}

// Create creates the nodes, a few at a time.
func Create(ctx context.Context, client kubernetes.Interface, nodes []*corev1.Node) error {
	const parallel = 8
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan *corev1.Node)
	)
	for range min(parallel, len(nodes)) {
		wg.Go(func() {
			for n := range next {
				if _, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("create node %s: %w", n.Name, err)
					}
					mu.Unlock()
				}
			}
		})
	}
	for _, n := range nodes {
		next <- n
	}
	close(next)
	wg.Wait()
	return first
}
