package webhook

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// amount is device memory and cores counted against a namespace's quota.
type amount struct {
	// MemoryMiB is device memory in MiB, summed over every card.
	MemoryMiB int64
	// Cores is the core share in percent of a card, summed over every
	// card (a container on 2 cards with 30 cores counts 60).
	Cores int64
}

// demandOf is what a pod about to be admitted asks of one vendor, as
// HAMi's webhook counts it (fitResourceQuota): each container asks count x
// per-card memory and count x per-card cores; init containers run one
// after another, so the pod asks, for memory and cores separately, the
// larger of the regular containers' sum and the largest init container.
// req lists the init containers first; inits is how many there are.
//
// Memory asked as a share of a card (nvidia.com/gpumem-percentage, or no
// memory at all, which means the whole card) counts 0 MiB: its MiB are
// known only once the scheduler has picked the card. MiB are as ParsePod
// returns them, already multiplied by the vendor's memoryFactor.
func demandOf(req devices.PodRequest, inits int) amount {
	var regular, init amount
	for i, r := range req.Containers {
		if r.IsZero() {
			continue
		}
		mem := int64(r.Count) * int64(r.MemoryMiB)
		cores := int64(r.Count) * int64(r.Cores)
		if i < inits {
			init.MemoryMiB = max(init.MemoryMiB, mem)
			init.Cores = max(init.Cores, cores)
			continue
		}
		regular.MemoryMiB += mem
		regular.Cores += cores
	}
	return amount{MemoryMiB: max(regular.MemoryMiB, init.MemoryMiB), Cores: max(regular.Cores, init.Cores)}
}

// holdingOf is what an admitted pod holds of one vendor, counted as HAMi
// counts a pod's usage (hami-protocol section 8): per card, the larger of
// the largest init container's grant and the sum of the regular
// containers' grants, memory and cores apart; once every init container
// has terminated with exit code 0, the regular containers' grants alone.
// The grants are those of the pod's allocated annotation (the scheduler
// writes it at bind and never changes it), whose entries list the init
// containers first. A pod without the annotation holds nothing yet.
func holdingOf(v devices.Vendor, pod *corev1.Pod) (amount, error) {
	_, key := v.AssignmentAnnotations()
	raw, ok := pod.Annotations[key]
	if !ok {
		return amount{}, nil
	}
	a, err := devices.DecodeAssignment(raw)
	if err != nil {
		return amount{}, err
	}
	inits := len(pod.Spec.InitContainers)
	initsDone := devices.InitContainersSucceeded(pod)
	type perCard struct{ init, regular amount }
	cards := map[string]*perCard{}
	var order []string
	for i, container := range a {
		isInit := i < inits
		if isInit && initsDone {
			continue
		}
		for _, g := range container {
			c := cards[g.UUID]
			if c == nil {
				c = &perCard{}
				cards[g.UUID] = c
				order = append(order, g.UUID)
			}
			if isInit {
				c.init.MemoryMiB = max(c.init.MemoryMiB, int64(g.MemoryMiB))
				c.init.Cores = max(c.init.Cores, int64(g.Cores))
			} else {
				c.regular.MemoryMiB += int64(g.MemoryMiB)
				c.regular.Cores += int64(g.Cores)
			}
		}
	}
	var held amount
	for _, uuid := range order {
		c := cards[uuid]
		held.MemoryMiB += max(c.init.MemoryMiB, c.regular.MemoryMiB)
		held.Cores += max(c.init.Cores, c.regular.Cores)
	}
	return held, nil
}
