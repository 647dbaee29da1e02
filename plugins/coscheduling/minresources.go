package coscheduling

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/apis/scheduling/v1alpha1"
	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// checkMinResources checks the PodGroup's minResources, and minMember pods,
// against what the nodes of the scheduler's snapshot have free
// (allocatable less what their pods request, the group's own pods left
// out), as Coscheduling's CheckClusterResource does: a sum over the
// cluster, not a placement. The snapshot holds the pods bound and those
// assumed, so other groups' members waiting at Permit count as using
// what they reserved. Resources the HAMi plugin manages (a vendor's card
// count, memory, cores, ...) are left out: their room is checked from the
// members' own requests, card by card (checkDeviceRoom), and most of them
// no node advertises. A shortfall is UnschedulableAndUnresolvable, as
// Coscheduling's: preemption, which simulates one member on one node at a
// time, cannot resolve a check of the whole group. A passing check is
// remembered for permitWaitingTimeSeconds, as Coscheduling does.
func (p *Plugin) checkMinResources(ctx context.Context, key string, pg *v1alpha1.PodGroup) *fwk.Status {
	if len(pg.Spec.MinResources) == 0 || p.resourcesChecked.fresh(key, p.clock.Now()) {
		return nil
	}
	want := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(int64(minMember(pg)), resource.DecimalSI)}
	hami := p.hami()
	for name, q := range pg.Spec.MinResources {
		if hami != nil && hami.ManagesResource(name) {
			continue
		}
		want[name] = q
	}
	missing, err := p.clusterShortfall(pg, want)
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("PodGroup %s minResources: %w", key, err))
	}
	if len(missing) > 0 {
		short := make([]string, 0, len(missing))
		for name, q := range missing {
			asked := want[name]
			short = append(short, fmt.Sprintf("%s %s (%s more than the nodes have free)", name, asked.String(), q.String()))
		}
		sort.Strings(short)
		klog.FromContext(ctx).V(4).Info("PodGroup's minResources are not free", "podGroup", key, "short", short)
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("PodGroup %s minResources not free in the cluster: %s", key, strings.Join(short, ", ")))
	}
	p.resourcesChecked.pass(key, p.clock.Now().Add(p.permitWait(nil)))
	return nil
}

// clusterShortfall takes, node after node of the scheduler's snapshot,
// what each has free from want, as Coscheduling's CheckClusterResource
// does, and returns what is still missing once every node was counted
// (nil when want was met). A node's free room is its allocatable less
// what its pods request, the pods of pg left out, and its pod capacity
// less its pods.
func (p *Plugin) clusterShortfall(pg *v1alpha1.PodGroup, want corev1.ResourceList) (corev1.ResourceList, error) {
	infos, err := p.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return nil, err
	}
	missing := want.DeepCopy()
	for _, info := range infos {
		node := info.Node()
		if node == nil {
			continue
		}
		free := node.Status.Allocatable.DeepCopy()
		if free == nil {
			free = corev1.ResourceList{}
		}
		pods := 0
		for _, pod := range fwk.NodePods(info) {
			if pod.Namespace == pg.Namespace && groupOf(pod) == pg.Name {
				continue
			}
			pods++
			for name, q := range podRequests(pod) {
				left := free[name]
				left.Sub(q)
				free[name] = left
			}
		}
		capacity := free[corev1.ResourcePods]
		capacity.Sub(*resource.NewQuantity(int64(pods), resource.DecimalSI))
		free[corev1.ResourcePods] = capacity
		for name, q := range missing {
			q.Sub(free[name])
			if q.Sign() <= 0 {
				delete(missing, name)
				continue
			}
			missing[name] = q
		}
		if len(missing) == 0 {
			return nil, nil
		}
	}
	return missing, nil
}

// checkedGroups remembers, per group, until when its minResources count as
// free.
type checkedGroups struct {
	mu    sync.Mutex
	until map[string]time.Time
}

func (c *checkedGroups) fresh(key string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	until, ok := c.until[key]
	return ok && now.Before(until)
}

func (c *checkedGroups) pass(key string, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.until == nil {
		c.until = map[string]time.Time{}
	}
	c.until[key] = until
}

func (c *checkedGroups) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.until, key)
}
