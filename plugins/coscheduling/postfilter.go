package coscheduling

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// postFilter runs when a member fits no node (after default preemption,
// which runs first and did not help): unless minMember are placed already,
// or the members still missing are at most podGroupRejectPercentage of
// minMember (the group is about to make it, the placed members keep
// waiting), the group's placed members waiting at Permit are turned away
// and release their cards, the group sorts behind the others, and backs
// off for podGroupBackoffSeconds when it has all its pods (its members
// are sent back to the active queue when the backoff ends); a member
// turned away during a backoff does not extend it. why says on
// which nodes and resources the member failed, for the PodGroup's
// GangRejected event.
func (p *Plugin) postFilter(ctx context.Context, pod *corev1.Pod, why string) (*fwk.PostFilterResult, *fwk.Status) {
	name := groupOf(pod)
	if name == "" {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	key := groupKey(pod.Namespace, name)
	pg, err := p.groups.get(pod.Namespace, name)
	if err != nil {
		return nil, fwk.NewStatus(fwk.Unschedulable, err.Error())
	}
	members := p.members.of(pod.Namespace, name)
	placed := p.permitted.placed(key, members, pod.UID)
	want := minMember(pg)
	if placed >= want {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	if int64(want-placed)*100 <= int64(want)*int64(p.args.PodGroupRejectPercentage) {
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("PodGroup %s has %d of minMember %d placed; its placed members keep waiting", key, placed, want))
	}
	logger := klog.FromContext(ctx)
	now := p.clock.Now()
	p.waits.end(key, now)
	released := p.rejectWaiting(key, fmt.Sprintf("PodGroup %s rejected: member %s fits no node", key, klog.KObj(pod)))
	backoff := time.Duration(p.args.PodGroupBackoffSeconds) * time.Second
	if backoff > 0 && live(members) >= want {
		if p.failures.rejected(key, now, backoff) {
			time.AfterFunc(backoff, func() { p.activate(logger, pod.Namespace, name, "") })
		}
	} else {
		p.failures.rejected(key, now, 0)
	}
	p.resourcesChecked.forget(key)
	p.reservations.changed(key)
	if released > 0 {
		// Nothing to tell the group when none of it was placed: the
		// member's own FailedScheduling says why.
		p.recordGroupEvent(pg, corev1.EventTypeWarning, reasonGangRejected, "Member %s fits no node (%s); %d placed members released their devices", klog.KObj(pod), why, released)
	}
	logger.V(3).Info("PodGroup rejected", "podGroup", key, "pod", klog.KObj(pod), "released", released, "backoff", backoff)
	return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("PodGroup %s rejected: member %s fits no node", key, klog.KObj(pod)))
}

// live counts the pods that are not terminated.
func live(pods []*corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if !terminated(p) {
			n++
		}
	}
	return n
}

// nodeReasons summarises why the nodes turned a pod away: each reason
// with the number of nodes that gave it, most frequent first, as
// kube-scheduler's FailedScheduling does.
func nodeReasons(nodes []string, status func(node string) *fwk.Status) string {
	counts := map[string]int{}
	for _, n := range nodes {
		st := status(n)
		if st == nil || st.IsSuccess() {
			continue
		}
		for _, r := range st.Reasons() {
			counts[r]++
		}
	}
	if len(counts) == 0 {
		return fmt.Sprintf("0/%d nodes are available", len(nodes))
	}
	reasons := make([]string, 0, len(counts))
	for r := range counts {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool {
		if counts[reasons[i]] != counts[reasons[j]] {
			return counts[reasons[i]] > counts[reasons[j]]
		}
		return reasons[i] < reasons[j]
	})
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = fmt.Sprintf("%d %s", counts[r], r)
	}
	return fmt.Sprintf("0/%d nodes are available: %s", len(nodes), strings.Join(parts, ", "))
}

// nodeNames lists the names of the nodes in the scheduler's snapshot.
func (p *Plugin) nodeNames() []string {
	infos, err := p.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(infos))
	for _, info := range infos {
		if n := info.Node(); n != nil {
			names = append(names, n.Name)
		}
	}
	return names
}
