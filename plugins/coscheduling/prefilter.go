package coscheduling

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/apis/scheduling/v1alpha1"
	"github.com/hami-scheduler/hami-scheduler/devices"
	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// preFilter turns a member of a PodGroup away before any node is tried
// when its group cannot be placed yet (PreFilter, whose signature depends
// on the Kubernetes release, calls it):
//   - the PodGroup does not exist or cannot be read;
//   - the group backs off after a rejection (podGroupBackoffSeconds);
//   - fewer than minMember of its pods exist, or too many of them are
//     still scheduling-gated to make minMember;
//   - its minResources are not free in the cluster (minresources.go);
//   - the cards of the cluster cannot take the devices of the members
//     still to place (the HAMi plugin's GroupRoom), not even once
//     preemption evicted what it may, so that no card is reserved for a
//     group that cannot run.
//
// Every refusal is UnschedulableAndUnresolvable, as Coscheduling's: they
// are about the whole group, and default preemption, which simulates one
// member on one node at a time and does not run PreFilter again, cannot
// resolve them (for a refusal it took as resolvable it would evict pods
// for a member that cannot run anyway, or fail on a node that fits with
// no victim and end the PostFilter chain before Coscheduling's own).
// Pods of no group are skipped.
func (p *Plugin) preFilter(ctx context.Context, pod *corev1.Pod) (*fwk.PreFilterResult, *fwk.Status) {
	p.scheduling.Store(true)
	name := groupOf(pod)
	if name == "" {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if !p.synced() {
		return nil, fwk.NewStatus(fwk.Error, "PodGroups and their members are still being listed")
	}
	key := groupKey(pod.Namespace, name)
	pg, err := p.groups.get(pod.Namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("PodGroup %s not found", key))
	}
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	if _, ok := pg.Annotations[devices.GangReservationsAnnotation]; ok {
		// Perhaps left by a replica that stopped while members waited.
		p.reservations.changed(key)
	}
	now := p.clock.Now()
	if until, ok := p.failures.backingOff(key, now); ok {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("PodGroup %s was rejected and backs off until %s", key, until.UTC().Format("15:04:05")))
	}
	members := p.members.of(pod.Namespace, name)
	if st := quorum(key, pg, members); st != nil {
		return nil, st
	}
	if st := p.checkMinResources(ctx, key, pg); st != nil {
		return nil, st
	}
	if st := p.checkDeviceRoom(ctx, key, pg, members); st != nil {
		return nil, st
	}
	return nil, nil
}

// minMember is the group's minMember, at least 1.
func minMember(pg *v1alpha1.PodGroup) int { return max(int(pg.Spec.MinMember), 1) }

// quorum checks that the group has at least minMember pods that are not
// terminated, and as many that are not scheduling-gated.
func quorum(key string, pg *v1alpha1.PodGroup, members []*corev1.Pod) *fwk.Status {
	live, gated := 0, 0
	for _, m := range members {
		if terminated(m) {
			continue
		}
		live++
		if len(m.Spec.SchedulingGates) > 0 {
			gated++
		}
	}
	want := minMember(pg)
	if live < want {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("PodGroup %s has %d of its minMember %d pods", key, live, want))
	}
	if live-gated < want {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("PodGroup %s has %d of its minMember %d pods past their scheduling gates", key, live-gated, want))
	}
	return nil
}

// checkDeviceRoom asks the HAMi plugin whether the cluster's cards could
// take the devices of the members still to place (minMember less those
// placed). When they could only once default preemption evicted pods of
// lower priority, the members go on: Filter turns each away where the
// cards are taken and default preemption evicts for it, member by member,
// as scheduler-plugins' gangs preempt. When not even then, no member is
// placed, no card reserved, and the PodGroup gets a GangUnschedulable
// event saying what runs short.
func (p *Plugin) checkDeviceRoom(ctx context.Context, key string, pg *v1alpha1.PodGroup, members []*corev1.Pod) *fwk.Status {
	hami := p.hami()
	if hami == nil {
		return nil
	}
	need := minMember(pg) - p.permitted.placed(key, members, "")
	if need <= 0 {
		return nil
	}
	pending := p.pending(pg.Namespace, pg.Name, "")
	short := hami.GroupRoom(pending, need)
	if short == nil {
		return nil
	}
	logger := klog.FromContext(ctx)
	if priority, ok := preemptorPriority(pending); ok && hami.GroupRoomAfterPreemption(pending, need, priority) == nil {
		logger.V(4).Info("PodGroup's devices fit together only after preemption", "podGroup", key, "reason", short.Error())
		return nil
	}
	msg := fmt.Sprintf("PodGroup %s cannot place its members' devices together: %v", key, short)
	logger.V(4).Info("PodGroup's devices do not fit together", "podGroup", key, "reason", short.Error())
	p.recordGroupEvent(pg, corev1.EventTypeWarning, reasonGangUnschedulable, "The members' devices cannot fit together: %v", short)
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg)
}

// preemptorPriority is the highest priority among the pods that may
// preempt (preemptionPolicy is not Never), and false when none may.
func preemptorPriority(pods []*corev1.Pod) (int32, bool) {
	var priority int32
	found := false
	for _, pod := range pods {
		if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == corev1.PreemptNever {
			continue
		}
		if pr := corev1helpers.PodPriority(pod); !found || pr > priority {
			priority, found = pr, true
		}
	}
	return priority, found
}
