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

	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
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
	Health  bool   `json:"health,omitempty"`
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
func RegisterAnnotation(node string, s Spec) string {
	cards := make([]registeredCard, s.Cards)
	for i := range cards {
		numa := 0
		if s.Cards > 1 {
			numa = i * 2 / s.Cards
		}
		cards[i] = registeredCard{
			ID: CardUUID(node, i), Index: uint(i), Count: s.Split, Devmem: s.MemoryMiB, Devcore: s.Cores,
			Type: CardType(s.Model), Numa: numa, Mode: "hami-core", Health: true,
		}
	}
	// Marshalling plain structs of strings and numbers cannot fail.
	data, _ := json.Marshal(cards)
	return string(data)
}

// Build builds the spec's nodes, named prefix-first, prefix-(first+1), ...:
// Ready, with the register annotation, and nvidia.com/gpu capacity and
// allocatable of cards x split as HAMi's device plugin advertises them.
// Callers may add labels or taints before creating them.
func (s Spec) Build(prefix string, first int) []*corev1.Node {
	nodes := make([]*corev1.Node, 0, s.Nodes)
	for i := range s.Nodes {
		nodes = append(nodes, s.node(fmt.Sprintf("%s-%d", prefix, first+i), first+i))
	}
	return nodes
}

func (s Spec) node(name string, ordinal int) *corev1.Node {
	resources := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("64"),
		corev1.ResourceMemory:           resource.MustParse("512Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
		corev1.ResourcePods:             resource.MustParse("256"),
		nvidia.DefaultCountName:         *resource.NewQuantity(int64(s.Cards)*int64(s.Split), resource.DecimalSI),
	}
	now := metav1.Now()
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				corev1.LabelHostname:   name,
				corev1.LabelOSStable:   "linux",
				corev1.LabelArchStable: "amd64",
				"gpu":                  "on",
				SimulatedLabel:         "true",
			},
			Annotations: map[string]string{nvidia.RegisterAnnotation: RegisterAnnotation(name, s)},
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
