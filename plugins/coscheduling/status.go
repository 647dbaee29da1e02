package coscheduling

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/hami-scheduler/hami-scheduler/apis/scheduling/v1alpha1"
)

// statusUpdater keeps each PodGroup's status as scheduler-plugins' PodGroup
// controller keeps it (groupStatus), from the PodGroup and its pods, on
// every replica: a write carries the resourceVersion it was computed from,
// so replicas never overwrite each other with a stale status, and a replica
// that finds the status already right writes nothing.
type statusUpdater struct {
	p     *Plugin
	queue groupQueue
}

func newStatusUpdater(p *Plugin) *statusUpdater {
	return &statusUpdater{p: p, queue: newGroupQueue("hami_podgroup_status")}
}

// enqueue asks for the group's status to be brought up to date; a nil
// updater (status updates off) does nothing.
func (u *statusUpdater) enqueue(key string) {
	if u != nil {
		u.queue.Add(key)
	}
}

func (u *statusUpdater) run(ctx context.Context) {
	// Its delaying goroutines end with it, also when the PodGroups are
	// never served and the informer never syncs.
	defer u.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), u.p.groups.informer.HasSynced, u.p.members.informer.HasSynced) {
		return
	}
	work(ctx, u.queue, "PodGroup status", u.reconcile)
}

// reconcile writes the group's status when it differs from groupStatus.
func (u *statusUpdater) reconcile(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pg, err := u.p.groups.get(namespace, name)
	if err != nil {
		// Gone, or unreadable: nothing to keep.
		return nil
	}
	want := groupStatus(pg, u.p.members.of(namespace, name))
	if equality.Semantic.DeepEqual(want, pg.Status) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": pg.ResourceVersion},
		"status":   want,
	})
	if err != nil {
		return err
	}
	_, err = u.p.groups.client.Resource(v1alpha1.Resource).Namespace(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		// Another writer got there first; the informer brings its version.
		return fmt.Errorf("PodGroup %s changed meanwhile: %w", key, err)
	case err != nil:
		return fmt.Errorf("write PodGroup %s status: %w", key, err)
	}
	return nil
}

// groupStatus is the status scheduler-plugins' PodGroup controller brings
// pg to, given its pods (every pod of pg's namespace labelled with pg's
// name, terminated ones included), taking in one go the steps the
// controller takes one reconcile at a time:
//
//   - a new group is Pending;
//   - a Pending group with at least minMember pods is Scheduling, and
//     occupiedBy names its pods' owners;
//   - otherwise running, succeeded and failed count the pods in those
//     phases, and the group is Pending with fewer than minMember pods,
//     Scheduling while fewer than minMember run or have succeeded, else
//     Running; Failed when a pod failed and the failed, running and
//     succeeded pods reach minMember; Finished when minMember succeeded;
//   - Finished and Failed are final.
func groupStatus(pg *v1alpha1.PodGroup, pods []*corev1.Pod) v1alpha1.PodGroupStatus {
	st := *pg.Status.DeepCopy()
	want := int(pg.Spec.MinMember)
	for range 4 {
		phase := st.Phase
		groupStep(&st, want, pods)
		if st.Phase == phase {
			break
		}
	}
	return st
}

// groupStep is one step of the controller's phase machine.
func groupStep(st *v1alpha1.PodGroupStatus, want int, pods []*corev1.Pod) {
	switch st.Phase {
	case v1alpha1.PodGroupFinished, v1alpha1.PodGroupFailed:
		return
	case "":
		st.Phase = v1alpha1.PodGroupPending
		return
	case v1alpha1.PodGroupPending:
		if len(pods) >= want {
			st.Phase = v1alpha1.PodGroupScheduling
			if owners := occupiedBy(pods); owners != "" {
				st.OccupiedBy = owners
			}
		}
		return
	}
	var running, succeeded, failed int32
	for _, pod := range pods {
		switch pod.Status.Phase {
		case corev1.PodRunning:
			running++
		case corev1.PodSucceeded:
			succeeded++
		case corev1.PodFailed:
			failed++
		}
	}
	st.Running, st.Succeeded, st.Failed = running, succeeded, failed
	min := int32(want)
	switch {
	case len(pods) < want:
		st.Phase = v1alpha1.PodGroupPending
		return
	case succeeded+running < min:
		st.Phase = v1alpha1.PodGroupScheduling
	default:
		st.Phase = v1alpha1.PodGroupRunning
	}
	if failed > 0 && failed+running+succeeded >= min {
		st.Phase = v1alpha1.PodGroupFailed
	}
	if succeeded >= min {
		st.Phase = v1alpha1.PodGroupFinished
	}
}

// occupiedBy names the owners of the group's oldest pod that has any, as
// "<namespace>/<owner name>", sorted and comma-separated.
func occupiedBy(pods []*corev1.Pod) string {
	sorted := slices.Clone(pods)
	sort.Slice(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	for _, pod := range sorted {
		if len(pod.OwnerReferences) == 0 {
			continue
		}
		owners := make([]string, 0, len(pod.OwnerReferences))
		for _, o := range pod.OwnerReferences {
			owners = append(owners, pod.Namespace+"/"+o.Name)
		}
		sort.Strings(owners)
		return strings.Join(owners, ",")
	}
	return ""
}
