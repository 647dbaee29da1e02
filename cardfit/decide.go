package cardfit

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Cards is what the check reads of the scheduler's device cards: the HAMi
// plugin's device cache (plugins.Plugin, through FromPlugin).
type Cards interface {
	// Simulate copies the cards free now for a simulation; ok is false
	// while the cache is still loading.
	Simulate() (s Placement, ok bool)
	// Placed reports whether the pod holds cards or is bound.
	Placed(pod *corev1.Pod) bool
	// Describe says what the pod asks of the cards, in HAMi's words.
	Describe(pod *corev1.Pod) string
	// Default applies the webhook's admission defaults to a pod built from
	// a template, as the pods Kueue starts will get them.
	Default(pod *corev1.Pod) error
}

// Placement is a simulation of the cards' usage that pods are placed on.
type Placement interface {
	// Place puts the pod on a node whose cards take it, counting what it
	// takes, or says why no node takes it.
	Place(pod *corev1.Pod) (node, why string, ok bool)
	// Fork copies the simulation.
	Fork() Placement
}

// decision is the check's answer for one workload.
type decision struct {
	wl      *workload
	check   string
	state   string
	message string
	updates []podSetUpdate
}

// promise is what a workload the check passed still needs of the cards:
// the pods of its pod sets that are not placed yet.
type promise struct {
	wl      *workload
	pending int
}

// round is one pass of the check over every workload: the promises first,
// then the workloads waiting on it, each with what the ones before it in
// this pass took.
type round struct {
	cards   Cards
	checks  map[string]bool
	now     time.Time
	timeout time.Duration
	// placed counts each workload's placed pods per pod set
	// (namespace/workload/podset).
	placed map[string]int
}

// placedPods counts the placed pods of each pod set that carry the
// annotations the check gives them.
func placedPods(cards Cards, pods []*corev1.Pod) map[string]int {
	out := map[string]int{}
	for _, pod := range pods {
		wl, ok := pod.Annotations[WorkloadAnnotation]
		if !ok || pod.DeletionTimestamp != nil || !cards.Placed(pod) {
			continue
		}
		out[pod.Namespace+"/"+wl+"/"+pod.Annotations[PodSetAnnotation]]++
	}
	return out
}

// decide answers every workload waiting on the check (quota reserved,
// state Pending), oldest reservation first: Ready when all its pods fit on
// the cards free now less what the workloads passed before still need,
// Retry with why not otherwise. ok is false while the cards are not known.
func (r *round) decide(workloads []*workload) (decisions []decision, promises []promise, ok bool) {
	sim, ok := r.cards.Simulate()
	if !ok {
		return nil, nil, false
	}
	var waiting []*workload
	for _, wl := range workloads {
		st := wl.checkNamed(r.checks)
		if st == nil || wl.DeletionTimestamp != nil {
			continue
		}
		switch {
		case st.State == stateReady:
			if p := r.keep(sim, wl, st); p.pending > 0 {
				promises = append(promises, p)
			}
		case st.State == statePending && wl.condition(condQuotaReserved) && !wl.condition(condEvicted) && wl.active() && !wl.condition(condFinished):
			// An evicted workload keeps its quota until its job stopped;
			// an answer then would outlive the reset of its checks.
			waiting = append(waiting, wl)
		}
	}
	sort.SliceStable(waiting, func(i, j int) bool {
		a, b := waiting[i].since(condQuotaReserved), waiting[j].since(condQuotaReserved)
		if !a.Equal(b) {
			return a.Before(b)
		}
		return waiting[i].Namespace+"/"+waiting[i].Name < waiting[j].Namespace+"/"+waiting[j].Name
	})
	held := 0
	for _, p := range promises {
		held += p.pending
	}
	for _, wl := range waiting {
		st := wl.checkNamed(r.checks)
		trial := sim.Fork()
		why, fits := r.fit(trial, wl)
		if fits {
			sim = trial
			decisions = append(decisions, decision{wl: wl, check: st.Name, state: stateReady, message: readyMessage(wl), updates: podSetUpdates(wl)})
			continue
		}
		if held > 0 {
			why += fmt.Sprintf("; %d pods of %d workloads passed before and not placed yet are counted", held, len(promises))
		}
		decisions = append(decisions, decision{wl: wl, check: st.Name, state: stateRetry, message: why})
	}
	return decisions, promises, true
}

// keep counts, in sim, the pods of a workload the check passed that are
// not placed yet, unless the promise ended: the workload finished, or the
// check passed it longer than timeout ago (its pods were not created, or
// not placed, in time).
func (r *round) keep(sim Placement, wl *workload, st *checkState) promise {
	p := promise{wl: wl}
	if wl.condition(condFinished) || wl.condition(condEvicted) || !wl.active() || r.now.Sub(st.LastTransitionTime.Time) > r.timeout {
		return p
	}
	counts := wl.counts()
	for i := range wl.Spec.PodSets {
		ps := &wl.Spec.PodSets[i]
		left := int(counts[i]) - r.placed[wl.Namespace+"/"+wl.Name+"/"+ps.Name]
		for k := range left {
			pod := wl.pod(ps, k)
			if r.cards.Default(pod) != nil {
				break
			}
			// A promised pod that no longer fits takes nothing: the
			// cards it was promised were taken by something else.
			_, _, _ = sim.Place(pod)
			p.pending++
		}
	}
	return p
}

// fit places every pod of every pod set of wl in sim; it returns why not
// when one does not fit.
func (r *round) fit(sim Placement, wl *workload) (why string, ok bool) {
	counts := wl.counts()
	for i := range wl.Spec.PodSets {
		ps := &wl.Spec.PodSets[i]
		n := int(counts[i])
		for k := range n {
			pod := wl.pod(ps, k)
			if err := r.cards.Default(pod); err != nil {
				return fmt.Sprintf("pod set %s: %v", ps.Name, err), false
			}
			if _, reason, ok := sim.Place(pod); !ok {
				asks := r.cards.Describe(pod)
				return shortMessage(ps.Name, k, n, asks, reason), false
			}
		}
	}
	return "", true
}

// shortMessage says, in HAMi's words, what runs short for a pod set of
// which placed pods fit and the next one does not.
func shortMessage(podSet string, placed, count int, asks, reason string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "pod set %s: %d of %d pods fit on the cards free now", podSet, placed, count)
	if asks != "" {
		fmt.Fprintf(&b, " (each asks %s)", asks)
	}
	fmt.Fprintf(&b, "; pod %d: %s", placed+1, reason)
	return b.String()
}

func readyMessage(wl *workload) string {
	total := 0
	for _, n := range wl.counts() {
		total += int(n)
	}
	return fmt.Sprintf("all %d pods fit on the cards free now", total)
}

// podSetUpdates mark every pod set's pods with the workload and pod set,
// so that the check counts them as they are placed.
func podSetUpdates(wl *workload) []podSetUpdate {
	out := make([]podSetUpdate, len(wl.Spec.PodSets))
	for i, ps := range wl.Spec.PodSets {
		out[i] = podSetUpdate{Name: ps.Name, Annotations: map[string]string{WorkloadAnnotation: wl.Name, PodSetAnnotation: ps.Name}}
	}
	return out
}
