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

// demand is what a pod about to be admitted asks of one vendor.
type demand struct {
	amount
	// MemoryUnknown is set when a container asks a share of each card's
	// memory (nvidia.com/gpumem-percentage, or no memory at all, which
	// means the whole card) rather than MiB: the MiB are known only once
	// the scheduler has picked the cards. Such containers add nothing to
	// MemoryMiB.
	MemoryUnknown bool
}

// demandOf sums what every container of the pod asks, init containers
// included: the scheduler assigns init containers their own cards and
// writes them into the pod's allocated annotation, which is what the quota
// counts for as long as the pod lives. A container asks count x per-card
// memory and count x per-card cores.
func demandOf(req devices.PodRequest) demand {
	var d demand
	for _, r := range req.Containers {
		if r.IsZero() {
			continue
		}
		if r.MemoryMiB > 0 {
			d.MemoryMiB += int64(r.Count) * int64(r.MemoryMiB)
		} else {
			d.MemoryUnknown = true
		}
		d.Cores += int64(r.Count) * int64(r.Cores)
	}
	return d
}

// holdingOf is what an admitted pod holds of one vendor: the sum of the
// grants in its allocated annotation (the scheduler writes it at bind and
// never changes it). A pod without the annotation holds nothing yet.
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
	var held amount
	a.Grants(func(g devices.Grant) {
		held.MemoryMiB += int64(g.MemoryMiB)
		held.Cores += int64(g.Cores)
	})
	return held, nil
}
