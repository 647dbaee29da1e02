package webhook

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/quota/v1/evaluator/core"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// quotaPrefix is the prefix of the ResourceQuota keys that bound device
// use, e.g. limits.nvidia.com/gpumem (hami-protocol section 4).
const quotaPrefix = "limits."

// QuotaChecker refuses a pod that would take its namespace over a device
// ResourceQuota: limits.<memory resource> bounds the MiB of device memory
// and limits.<cores resource> the core percent held by the namespace's
// non-terminated pods, summed over every card they were given.
type QuotaChecker struct {
	reader   client.Reader
	registry *devices.Registry
	// pods matches pods to a quota's scopes exactly as kube's own quota
	// admission does (Terminating, BestEffort, PriorityClass, ...).
	pods  quota.Evaluator
	clock clock.Clock
}

// NewQuotaChecker reads ResourceQuotas and pods through reader, normally
// the manager's informer cache.
func NewQuotaChecker(reader client.Reader, registry *devices.Registry) *QuotaChecker {
	c := clock.RealClock{}
	return &QuotaChecker{reader: reader, registry: registry, pods: core.NewPodEvaluator(nil, c), clock: c}
}

// heldBy is what one pod of the namespace holds, index-aligned with the
// registry's vendors.
type heldBy struct {
	pod  *corev1.Pod
	held []amount
}

// Check returns why pod, which asks reqs (index-aligned with the
// registry's vendors), does not fit its namespace's device quotas, or ""
// when it fits. An error means the quotas or pods could not be read.
func (q *QuotaChecker) Check(ctx context.Context, namespace string, pod *corev1.Pod, reqs []devices.PodRequest) (string, error) {
	var quotas corev1.ResourceQuotaList
	if err := q.reader.List(ctx, &quotas, client.InNamespace(namespace)); err != nil {
		return "", fmt.Errorf("list resource quotas of namespace %s: %w", namespace, err)
	}
	slices.SortFunc(quotas.Items, func(a, b corev1.ResourceQuota) int { return strings.Compare(a.Name, b.Name) })
	asks := make([]amount, len(reqs))
	for vi := range reqs {
		asks[vi] = demandOf(reqs[vi], len(pod.Spec.InitContainers))
	}
	var held []heldBy // read once, on the first quota that needs it
	for i := range quotas.Items {
		rq := &quotas.Items[i]
		if !q.bounds(rq, asks) {
			continue
		}
		applies, err := q.inScope(rq, pod)
		if err != nil {
			return "", fmt.Errorf("resource quota %s/%s: %w", namespace, rq.Name, err)
		}
		if !applies {
			continue
		}
		if held == nil {
			if held, err = q.holdings(ctx, namespace); err != nil {
				return "", err
			}
		}
		for vi, v := range q.registry.Vendors() {
			if asks[vi] == (amount{}) {
				continue
			}
			used, err := q.used(rq, held, vi)
			if err != nil {
				return "", fmt.Errorf("resource quota %s/%s: %w", namespace, rq.Name, err)
			}
			if refusal := exceeds(rq, v, used, asks[vi]); refusal != "" {
				return refusal, nil
			}
		}
	}
	return "", nil
}

// bounds reports whether the quota limits a device resource of a vendor
// the pod asks memory or cores of. A pod that asks neither (0 MiB because
// its memory is a percentage, and 0 cores) is not checked, as in HAMi.
func (q *QuotaChecker) bounds(rq *corev1.ResourceQuota, asks []amount) bool {
	for vi, v := range q.registry.Vendors() {
		if asks[vi] == (amount{}) {
			continue
		}
		names := v.Resources()
		for _, n := range []corev1.ResourceName{names.Memory, names.Cores} {
			if n == "" {
				continue
			}
			if _, ok := rq.Spec.Hard[quotaPrefix+n]; ok {
				return true
			}
		}
	}
	return false
}

// inScope reports whether the quota's scopes (spec.scopes and
// spec.scopeSelector) all match the pod; a quota without scopes matches
// every pod.
func (q *QuotaChecker) inScope(rq *corev1.ResourceQuota, pod *corev1.Pod) (bool, error) {
	scopes := scopesOf(rq)
	if len(scopes) == 0 {
		return true, nil
	}
	matched, err := q.pods.MatchingScopes(pod, scopes)
	if err != nil {
		return false, err
	}
	return len(matched) == len(scopes), nil
}

func scopesOf(rq *corev1.ResourceQuota) []corev1.ScopedResourceSelectorRequirement {
	var out []corev1.ScopedResourceSelectorRequirement
	for _, s := range rq.Spec.Scopes {
		out = append(out, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists})
	}
	if rq.Spec.ScopeSelector != nil {
		out = append(out, rq.Spec.ScopeSelector.MatchExpressions...)
	}
	return out
}

// holdings reads what every pod of the namespace that is still charged to
// quota holds. Pods in a terminal phase, or deleted and past their grace
// period, are not charged (the rule of kube's own quota). A pod whose
// allocated annotation cannot be decoded is skipped with a log line: the
// scheduler does not count it either.
func (q *QuotaChecker) holdings(ctx context.Context, namespace string) ([]heldBy, error) {
	var pods corev1.PodList
	if err := q.reader.List(ctx, &pods, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list pods of namespace %s: %w", namespace, err)
	}
	vendors := q.registry.Vendors()
	out := make([]heldBy, 0, len(pods.Items))
	for i := range pods.Items {
		p := &pods.Items[i]
		if !core.QuotaV1Pod(p, q.clock) {
			continue
		}
		h := heldBy{pod: p, held: make([]amount, len(vendors))}
		for vi, v := range vendors {
			a, err := holdingOf(v, p)
			if err != nil {
				klog.ErrorS(err, "Pod's device assignment is unreadable; not counted against quota", "pod", klog.KObj(p), "vendor", v.Name())
				continue
			}
			h.held[vi] = a
		}
		out = append(out, h)
	}
	return out, nil
}

// used sums what the pods in the quota's scope hold of vendor vi.
func (q *QuotaChecker) used(rq *corev1.ResourceQuota, held []heldBy, vi int) (amount, error) {
	var total amount
	for _, h := range held {
		if h.held[vi] == (amount{}) {
			continue
		}
		applies, err := q.inScope(rq, h.pod)
		if err != nil {
			return amount{}, err
		}
		if applies {
			total.MemoryMiB += h.held[vi].MemoryMiB
			total.Cores += h.held[vi].Cores
		}
	}
	return total, nil
}

// exceeds returns why a pod asking d of vendor v does not fit the quota's
// hard limits with used already held, or "". Memory a pod asks as a share
// of a card counts 0 MiB (demandOf), so only the held memory can refuse it.
// With a memoryFactor above 1 the memory limit is multiplied by it, as
// HAMi's FitQuota does: held and asked MiB are already multiplied.
func exceeds(rq *corev1.ResourceQuota, v devices.Vendor, used amount, d amount) string {
	names := v.Resources()
	if names.Memory != "" {
		key := quotaPrefix + names.Memory
		if hard, ok := rq.Spec.Hard[key]; ok {
			limit, shown := hard.Value(), fmt.Sprintf("%d MiB", hard.Value())
			if f := memoryFactor(v); f > 1 {
				if limit > math.MaxInt64/f {
					limit = math.MaxInt64
				} else {
					limit *= f
				}
				shown = fmt.Sprintf("%d (x memoryFactor %d = %d MiB)", hard.Value(), f, limit)
			}
			if used.MemoryMiB+d.MemoryMiB > limit {
				return fmt.Sprintf("namespace %s is over resource quota %s: %s is %s, its pods hold %d MiB and this pod asks %d MiB more (cards x %s); ask for less device memory or have the quota raised",
					rq.Namespace, rq.Name, key, shown, used.MemoryMiB, d.MemoryMiB, names.Memory)
			}
		}
	}
	if names.Cores != "" {
		key := quotaPrefix + names.Cores
		if hard, ok := rq.Spec.Hard[key]; ok {
			if limit := hard.Value(); used.Cores+d.Cores > limit {
				return fmt.Sprintf("namespace %s is over resource quota %s: %s is %d, its pods hold %d and this pod asks %d more (cards x %s); ask for fewer cores or have the quota raised",
					rq.Namespace, rq.Name, key, limit, used.Cores, d.Cores, names.Cores)
			}
		}
	}
	return ""
}

// memoryFactor is the vendor's memoryFactor, 1 when it has none.
func memoryFactor(v devices.Vendor) int64 {
	if ms, ok := v.(devices.MemoryScaler); ok {
		return max(int64(ms.MemoryFactor()), 1)
	}
	return 1
}
