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
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/apis/scheduling/v1alpha1"
	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// checkMinResources checks the PodGroup's minResources, and minMember pods,
// against what the cluster's nodes have free in all (allocatable less what
// their pods, other than the group's, request), as Coscheduling does: a sum
// over the cluster, not a placement. Resources the HAMi plugin manages (a
// vendor's card count, memory, cores, ...) are left out: their room is
// checked from the members' own requests, card by card (checkDeviceRoom),
// and most of them no node advertises. A passing check is remembered for
// permitWaitingTimeSeconds, as Coscheduling does.
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
	free, err := p.clusterFree(pg)
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("PodGroup %s minResources: %w", key, err))
	}
	var short []string
	for name, q := range want {
		have := free[name]
		if q.Cmp(have) > 0 {
			short = append(short, fmt.Sprintf("%s %s (free %s)", name, q.String(), have.String()))
		}
	}
	if len(short) > 0 {
		sort.Strings(short)
		klog.FromContext(ctx).V(4).Info("PodGroup's minResources are not free", "podGroup", key, "short", short)
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("PodGroup %s minResources not free in the cluster: %s", key, strings.Join(short, ", ")))
	}
	p.resourcesChecked.pass(key, p.clock.Now().Add(p.permitWait(nil)))
	return nil
}

// clusterFree sums, over the scheduler's nodes, allocatable less what the
// bound pods that are not pg's members request.
func (p *Plugin) clusterFree(pg *v1alpha1.PodGroup) (map[corev1.ResourceName]resource.Quantity, error) {
	informers := p.handle.SharedInformerFactory()
	nodes, err := informers.Core().V1().Nodes().Lister().List(labels.Everything())
	if err != nil {
		return nil, err
	}
	pods, err := informers.Core().V1().Pods().Lister().List(labels.Everything())
	if err != nil {
		return nil, err
	}
	free := map[corev1.ResourceName]resource.Quantity{}
	onNodes := map[string]bool{}
	for _, n := range nodes {
		onNodes[n.Name] = true
		for name, q := range n.Status.Allocatable {
			sum := free[name]
			sum.Add(q)
			free[name] = sum
		}
	}
	for _, pod := range pods {
		if !onNodes[pod.Spec.NodeName] || terminated(pod) || (pod.Namespace == pg.Namespace && groupOf(pod) == pg.Name) {
			continue
		}
		for name, q := range podRequests(pod) {
			sum := free[name]
			sum.Sub(q)
			free[name] = sum
		}
		count := free[corev1.ResourcePods]
		count.Sub(*resource.NewQuantity(1, resource.DecimalSI))
		free[corev1.ResourcePods] = count
	}
	return free, nil
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
