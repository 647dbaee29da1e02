package perf

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/internal/allocation"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

// The capacities of HAMi's DRA driver's devices (docs/dra.md): memory in
// bytes, cores in percent of the card.
const (
	draMemory resourceapi.QualifiedName = "memory"
	draCores  resourceapi.QualifiedName = "cores"
)

// draCards are the cards of the DRA nodes, one per device their
// ResourceSlices publish, with what the allocated claims consume of each:
// every device counted once, however many claims share it. A result that
// records no consumed capacity takes the whole device. Split is 0: a DRA
// card has no sharer count, its memory and cores bound it. problems name
// a result on a device no slice publishes, and a device whose claims
// consume more than it has.
func draCards(published []resourceapi.ResourceSlice, claims []resourceapi.ResourceClaim) (cards []allocation.CardUse, problems []string) {
	index := map[string]int{}
	for _, s := range published {
		for _, d := range s.Spec.Devices {
			memory, cores := d.Capacity[draMemory].Value, d.Capacity[draCores].Value
			index[s.Spec.Driver+"/"+s.Spec.Pool.Name+"/"+d.Name] = len(cards)
			cards = append(cards, allocation.CardUse{
				Node: s.Spec.Pool.Name, Vendor: s.Spec.Driver,
				Card:      devices.Card{UUID: d.Name, MemoryMiB: int32(memory.Value() >> 20), Cores: int32(cores.Value()), Healthy: true},
				CoreTotal: int32(cores.Value()),
			})
		}
	}
	for _, claim := range claims {
		if claim.Status.Allocation == nil {
			continue
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			i, ok := index[r.Driver+"/"+r.Pool+"/"+r.Device]
			if !ok {
				problems = append(problems, fmt.Sprintf("claim %s/%s: device %s/%s/%s is not published", claim.Namespace, claim.Name, r.Driver, r.Pool, r.Device))
				continue
			}
			c := &cards[i]
			memory, cores := int64(c.MemoryMiB), int64(c.Cores)
			if q, ok := r.ConsumedCapacity[draMemory]; ok {
				memory = q.Value() >> 20
			}
			if q, ok := r.ConsumedCapacity[draCores]; ok {
				cores = q.Value()
			}
			c.Used.Sharers++
			c.Used.MemoryMiB += memory
			c.Used.Cores += cores
			c.Pods = append(c.Pods, claim.Namespace+"/"+claim.Name)
		}
	}
	for _, c := range cards {
		if c.Used.MemoryMiB > int64(c.MemoryMiB) || c.Used.Cores > int64(c.CoreTotal) {
			problems = append(problems, fmt.Sprintf("DRA card %s of %s: claims %v consume %d MiB and %d cores of %d MiB and %d",
				c.UUID, c.Node, c.Pods, c.Used.MemoryMiB, c.Used.Cores, c.MemoryMiB, c.CoreTotal))
		}
	}
	return cards, problems
}

// podClaims are the names of the claims a pod uses: those its spec names
// (a template's through status.resourceClaimStatuses) and the one
// kube-scheduler, or hami-scheduler, wrote for its extended resources
// (status.extendedResourceClaimStatus).
func podClaims(p *corev1.Pod) []string {
	var names []string
	for _, c := range p.Spec.ResourceClaims {
		if c.ResourceClaimName != nil {
			names = append(names, *c.ResourceClaimName)
			continue
		}
		for _, s := range p.Status.ResourceClaimStatuses {
			if s.Name == c.Name && s.ResourceClaimName != nil {
				names = append(names, *s.ResourceClaimName)
			}
		}
	}
	if s := p.Status.ExtendedResourceClaimStatus; s != nil && s.ResourceClaimName != "" {
		names = append(names, s.ResourceClaimName)
	}
	return names
}

// checkClaims checks the running pods on DRA nodes (onDRA): each uses a
// claim, and every claim it uses is allocated on its node's pool and
// reserved for it. reserved counts the pods that pass; problems say what
// is wrong with each other one.
func checkClaims(pods []corev1.Pod, draNodes map[string]bool, claims []resourceapi.ResourceClaim) (onDRA, reserved int, problems []string) {
	byName := map[string]*resourceapi.ResourceClaim{}
	for i := range claims {
		byName[claims[i].Name] = &claims[i]
	}
	for i := range pods {
		p := &pods[i]
		if p.Status.Phase != corev1.PodRunning || !draNodes[p.Spec.NodeName] {
			continue
		}
		onDRA++
		problem := claimProblem(p, podClaims(p), byName)
		if problem == "" {
			reserved++
			continue
		}
		problems = append(problems, fmt.Sprintf("pod %s/%s on DRA node %s: %s", p.Namespace, p.Name, p.Spec.NodeName, problem))
	}
	return onDRA, reserved, problems
}

// claimProblem says what is wrong with a running pod's claims on its DRA
// node; "" when nothing is.
func claimProblem(p *corev1.Pod, names []string, claims map[string]*resourceapi.ResourceClaim) string {
	if len(names) == 0 {
		return "runs without a claim"
	}
	for _, name := range names {
		c, ok := claims[name]
		switch {
		case !ok:
			return "claim " + name + " not found"
		case c.Status.Allocation == nil || len(c.Status.Allocation.Devices.Results) == 0:
			return "claim " + name + " not allocated"
		case slices.ContainsFunc(c.Status.Allocation.Devices.Results, func(r resourceapi.DeviceRequestAllocationResult) bool { return r.Pool != p.Spec.NodeName }):
			return "claim " + name + " has a device of another node's pool"
		case !slices.ContainsFunc(c.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool { return r.UID == p.UID }):
			return "claim " + name + " not reserved for the pod"
		}
	}
	return ""
}

// phaseDRA reads the DRA side of a phase before its pods go: the DRA
// cards with what the namespace's claims consume of them (draCards), and
// the check of the running pods on DRA nodes (checkClaims), whose counts
// it writes into ph.
func phaseDRA(ctx context.Context, client kubernetes.Interface, namespace string, nodes []corev1.Node, pods []corev1.Pod, ph *Phase) ([]allocation.CardUse, []string, error) {
	published, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	claims, err := client.ResourceV1().ResourceClaims(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	cards, problems := draCards(published.Items, claims.Items)
	onDRA := map[string]bool{}
	for i := range nodes {
		if nodes[i].Labels[simnode.DRADriverLabel] != "" {
			onDRA[nodes[i].Name] = true
		}
	}
	var claimProblems []string
	ph.DRAPods, ph.DRAReserved, claimProblems = checkClaims(pods, onDRA, claims.Items)
	return cards, append(problems, claimProblems...), nil
}

// usedCards counts the cards holding at least one grant.
func usedCards(cards []allocation.CardUse) int {
	n := 0
	for _, c := range cards {
		if c.Used.Sharers > 0 {
			n++
		}
	}
	return n
}

// widestRequest is the most cards one container of the pods asks for
// (its nvidia.com/gpu limit), as the pods were written.
func widestRequest(specs []corev1.PodSpec) int {
	widest := 0
	for _, s := range specs {
		for _, c := range s.Containers {
			if q, ok := c.Resources.Limits[nvidia.DefaultCountName]; ok {
				widest = max(widest, int(q.Value()))
			}
		}
	}
	return widest
}
