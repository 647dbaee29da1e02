package plugins

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/hami-scheduler/hami-scheduler/devices"
	devicecache "github.com/hami-scheduler/hami-scheduler/plugins/cache"
)

// quotaLimits are the device limits of each namespace's ResourceQuotas, as
// HAMi reads them: only spec.hard keys limits.<memory resource> and
// limits.<cores resource> of an enabled vendor count, as plain numbers
// (MiB for memory: 10240, not 10Gi). Per namespace and key the last quota
// added or updated wins, and deleting any quota clears the keys it set.
type quotaLimits struct {
	mu     sync.RWMutex
	limits map[string]map[corev1.ResourceName]int64
}

// quotaKey is the ResourceQuota key of a device resource.
func quotaKey(resource corev1.ResourceName) corev1.ResourceName {
	return corev1.ResourceName("limits." + string(resource))
}

// set records the device limits of a quota.
func (q *quotaLimits) set(quota *corev1.ResourceQuota, names []corev1.ResourceName) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, name := range names {
		v, ok := quota.Spec.Hard[quotaKey(name)]
		if !ok {
			continue
		}
		if q.limits == nil {
			q.limits = map[string]map[corev1.ResourceName]int64{}
		}
		ns := q.limits[quota.Namespace]
		if ns == nil {
			ns = map[corev1.ResourceName]int64{}
			q.limits[quota.Namespace] = ns
		}
		ns[name] = v.Value()
	}
}

// clear forgets the keys a deleted quota set.
func (q *quotaLimits) clear(quota *corev1.ResourceQuota, names []corev1.ResourceName) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, name := range names {
		if _, ok := quota.Spec.Hard[quotaKey(name)]; ok {
			delete(q.limits[quota.Namespace], name)
		}
	}
}

// limit returns the namespace's limit for a resource, if one is set.
func (q *quotaLimits) limit(namespace string, name corev1.ResourceName) (int64, bool) {
	if name == "" {
		return 0, false
	}
	q.mu.RLock()
	defer q.mu.RUnlock()
	v, ok := q.limits[namespace][name]
	return v, ok
}

// all returns a copy of every namespace's limits.
func (q *quotaLimits) all() map[string]map[corev1.ResourceName]int64 {
	q.mu.RLock()
	defer q.mu.RUnlock()
	out := make(map[string]map[corev1.ResourceName]int64, len(q.limits))
	for ns, byName := range q.limits {
		cp := make(map[corev1.ResourceName]int64, len(byName))
		for k, v := range byName {
			cp[k] = v
		}
		out[ns] = cp
	}
	return out
}

// quotaResources lists the memory and cores resources of every vendor.
func (p *Plugin) quotaResources() []corev1.ResourceName {
	var names []corev1.ResourceName
	for _, v := range p.registry.Vendors() {
		r := v.Resources()
		for _, n := range []corev1.ResourceName{r.Memory, r.Cores} {
			if n != "" {
				names = append(names, n)
			}
		}
	}
	return names
}

// watchQuotas feeds quotaLimits from the shared ResourceQuota informer.
func (p *Plugin) watchQuotas() (cache.ResourceEventHandlerRegistration, error) {
	names := p.quotaResources()
	informer := p.handle.SharedInformerFactory().Core().V1().ResourceQuotas().Informer()
	return informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if q, ok := obj.(*corev1.ResourceQuota); ok {
				p.quotas.set(q, names)
			}
		},
		UpdateFunc: func(_, obj any) {
			if q, ok := obj.(*corev1.ResourceQuota); ok {
				p.quotas.set(q, names)
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if q, ok := obj.(*corev1.ResourceQuota); ok {
				p.quotas.clear(q, names)
			}
		},
	})
}

// exceedsQuota reports which quota key (e.g. limits.nvidia.com/gpumem)
// placing assignment a (vendor vi) would take the pod's namespace past, and
// why, counting every pod the cache holds there, assumed ones included, and
// what the namespace's claims take of DRA cards (the cycle's DRA view,
// pending ones included), so a burst cannot overshoot. "" means it fits.
func (p *Plugin) exceedsQuota(s *cycleState, pod *corev1.Pod, vi int, v devices.Vendor, a devices.Assignment, inits int) (key corev1.ResourceName, why string) {
	r := v.Resources()
	memLimit, memSet := p.quotas.limit(pod.Namespace, r.Memory)
	coreLimit, coreSet := p.quotas.limit(pod.Namespace, r.Cores)
	if !memSet && !coreSet {
		return "", ""
	}
	need := devicecache.AssignmentUse(a, inits)
	used := p.cache.NamespaceUse(pod.Namespace, vi)
	if s != nil && s.dra != nil {
		memory, cores := s.dra.namespaceUse(pod.Namespace, vi)
		used.MemoryMiB += memory
		used.Cores += cores
	}
	if memSet {
		if scaler, ok := v.(devices.MemoryScaler); ok && scaler.MemoryFactor() > 1 {
			memLimit *= int64(scaler.MemoryFactor())
		}
		if used.MemoryMiB+need.MemoryMiB > memLimit {
			return quotaKey(r.Memory), fmt.Sprintf("%s quota: %d used + %d asked > %d", quotaKey(r.Memory), used.MemoryMiB, need.MemoryMiB, memLimit)
		}
	}
	if coreSet && used.Cores+need.Cores > coreLimit {
		return quotaKey(r.Cores), fmt.Sprintf("%s quota: %d used + %d asked > %d", quotaKey(r.Cores), used.Cores, need.Cores, coreLimit)
	}
	return "", ""
}
