package coscheduling

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/hami-scheduler/hami-scheduler/apis/scheduling/v1alpha1"
	"github.com/hami-scheduler/hami-scheduler/devices"
	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// reservationPublisher writes on each PodGroup the cards its members
// waiting at Permit hold (devices.GangReservationsAnnotation), and removes
// them once none waits. Only the scheduler that placed them knows them: a
// standby replica places nothing and writes nothing. A group's annotation
// left by a replica that stopped is replaced when this one next schedules
// a member (PreFilter).
type reservationPublisher struct {
	p     *Plugin
	queue groupQueue
	// published are the groups this scheduler last wrote reservations on
	// (the informer may not show its write yet); only the worker uses it.
	published map[string]bool
}

func newReservationPublisher(p *Plugin) *reservationPublisher {
	return &reservationPublisher{p: p, queue: newGroupQueue("hami_podgroup_reservations"), published: map[string]bool{}}
}

// changed asks for the group's reservations to be published again, now
// and once more a second later: a member let through or turned away
// leaves the framework's waiting pods, and the HAMi plugin's cache, from
// its binding cycle, a moment after the change.
func (r *reservationPublisher) changed(key string) {
	r.queue.Add(key)
	r.queue.AddAfter(key, settleDelay)
}

// settleDelay is how long after a change its aftermath is published.
const settleDelay = time.Second

func (r *reservationPublisher) run(ctx context.Context) {
	// Its delaying goroutines end with it, also when the PodGroups are
	// never served and the informer never syncs.
	defer r.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), r.p.groups.informer.HasSynced) {
		return
	}
	work(ctx, r.queue, "PodGroup reservations", r.reconcile)
}

func (r *reservationPublisher) reconcile(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pg, err := r.p.groups.get(namespace, name)
	if err != nil {
		return nil
	}
	members := r.waitingMembers(key)
	old, had := pg.Annotations[devices.GangReservationsAnnotation]
	var value any // nil removes the annotation
	if len(members) > 0 {
		if had && sameMembers(old, members) {
			return nil
		}
		data, err := json.Marshal(devices.GangReservations{Updated: r.p.clock.Now().UTC(), Members: members})
		if err != nil {
			return err
		}
		value = string(data)
	} else if !had && !r.published[key] {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]any{devices.GangReservationsAnnotation: value},
	}})
	if err != nil {
		return err
	}
	_, err = r.p.groups.client.Resource(v1alpha1.Resource).Namespace(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("write PodGroup %s reservations: %w", key, err)
	}
	if value != nil {
		r.published[key] = true
	} else {
		delete(r.published, key)
	}
	return nil
}

// waitingMembers are the members of the group waiting at Permit in this
// scheduler, with what they hold, by pod name.
func (r *reservationPublisher) waitingMembers(key string) []devices.GangReservation {
	hami := r.p.hami()
	if hami == nil {
		return nil
	}
	var out []devices.GangReservation
	r.p.handle.IterateOverWaitingPods(func(w fwk.WaitingPod) {
		pod := w.GetPod()
		name := groupOf(pod)
		if name == "" || groupKey(pod.Namespace, name) != key || !slices.Contains(w.GetPendingPlugins(), Name) {
			// Not of the group, or let through already.
			return
		}
		node, allocated, ok := hami.Reserved(pod.UID)
		if !ok {
			return
		}
		out = append(out, devices.GangReservation{Pod: pod.Name, UID: string(pod.UID), Node: node, Allocated: allocated})
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Pod < out[j].Pod })
	return out
}

// sameMembers reports whether the annotation's value lists these members
// holding the same cards (whenever it was written).
func sameMembers(value string, members []devices.GangReservation) bool {
	old, err := devices.ParseGangReservations(value)
	if err != nil || len(old.Members) != len(members) {
		return false
	}
	return slices.EqualFunc(old.Members, members, func(a, b devices.GangReservation) bool {
		return a.Pod == b.Pod && a.UID == b.UID && a.Node == b.Node && maps.Equal(a.Allocated, b.Allocated)
	})
}
