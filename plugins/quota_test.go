package plugins

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
)

func deviceQuota(name string, hard map[string]int64) *corev1.ResourceQuota {
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{}}}
	for k, v := range hard {
		q.Spec.Hard[corev1.ResourceName(k)] = *resource.NewQuantity(v, resource.DecimalSI)
	}
	return q
}

func withPercent(l corev1.ResourceList, pct int64) corev1.ResourceList {
	l["nvidia.com/gpumem-percentage"] = *resource.NewQuantity(pct, resource.DecimalSI)
	return l
}

// The scheduler enforces the namespace's device quota in Filter, counting
// the pods it has already placed or assumed, so pods created together
// cannot all pass it; percentages count what they resolve to on the card.
func TestQuotaInFilter(t *testing.T) {
	tests := []struct {
		name  string
		quota map[string]int64
		// placed are scheduled (Filter+Reserve) first, in order.
		placed []*corev1.Pod
		pod    *corev1.Pod
		// wantErr is a substring of Filter's reason; "" means it fits.
		wantErr string
	}{
		{name: "no quota", pod: gpuPod("p", gpu(1, 9000, 0))},
		{name: "within the memory quota", quota: map[string]int64{"limits.nvidia.com/gpumem": 5000},
			placed: []*corev1.Pod{gpuPod("a", gpu(1, 2000, 0))}, pod: gpuPod("p", gpu(1, 3000, 0))},
		{name: "assumed pods count: a burst cannot overshoot", quota: map[string]int64{"limits.nvidia.com/gpumem": 5000},
			placed: []*corev1.Pod{gpuPod("a", gpu(1, 3000, 0))}, pod: gpuPod("p", gpu(1, 3000, 0)),
			wantErr: "limits.nvidia.com/gpumem quota: 3000 used + 3000 asked > 5000"},
		{name: "percentage counts the MiB it resolves to", quota: map[string]int64{"limits.nvidia.com/gpumem": 5000},
			pod: gpuPod("p", withPercent(gpu(1, 0, 0), 60)), wantErr: "0 used + 6000 asked > 5000"},
		{name: "whole card counts its memory", quota: map[string]int64{"limits.nvidia.com/gpumem": 5000},
			pod: gpuPod("p", gpu(1, 0, 0)), wantErr: "0 used + 10000 asked > 5000"},
		{name: "two cards count twice", quota: map[string]int64{"limits.nvidia.com/gpumem": 5000},
			pod: gpuPod("p", gpu(2, 3000, 0)), wantErr: "0 used + 6000 asked > 5000"},
		{name: "cores quota", quota: map[string]int64{"limits.nvidia.com/gpucores": 50},
			placed: []*corev1.Pod{gpuPod("a", gpu(1, 1000, 30))}, pod: gpuPod("p", gpu(1, 1000, 30)),
			wantErr: "limits.nvidia.com/gpucores quota: 30 used + 30 asked > 50"},
		{name: "explicit zero blocks any use", quota: map[string]int64{"limits.nvidia.com/gpumem": 0},
			pod: gpuPod("p", gpu(1, 1, 0)), wantErr: "0 used + 1 asked > 0"},
		{name: "requests.* keys are not device quota", quota: map[string]int64{"requests.nvidia.com/gpumem": 1},
			pod: gpuPod("p", gpu(1, 3000, 0))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []runtime.Object{gpuNode("n1", card("g0", 10000), card("g1", 10000))}
			if tt.quota != nil {
				objs = append(objs, deviceQuota("gpu", tt.quota))
			}
			h := newHarness(t, nil, objs...)
			waitForQuota(t, h, tt.quota != nil)
			for _, p := range tt.placed {
				h.schedule(p, "n1")
			}
			state, st := h.filter(tt.pod, "n1")
			if tt.wantErr == "" {
				if !st.IsSuccess() {
					t.Fatalf("Filter: %v, want a fit", st)
				}
				return
			}
			if msg := explained(state, "n1", st); st.Code() != fwk.Unschedulable || !strings.Contains(msg, tt.wantErr) {
				t.Fatalf("Filter: %v (%s), want Unschedulable containing %q", st, msg, tt.wantErr)
			}
			if key := strings.SplitN(tt.wantErr, " ", 2)[0]; strings.HasPrefix(key, "limits.") && st.Message() != "exceeding resource quota: "+key {
				t.Errorf("Filter message %q, want the key alone, %q", st.Message(), "exceeding resource quota: "+key)
			}
		})
	}
}

// Per namespace and key the last quota wins; deleting a quota clears its
// keys (HAMi's rules).
func TestQuotaLimits(t *testing.T) {
	names := []corev1.ResourceName{"nvidia.com/gpumem", "nvidia.com/gpucores"}
	var q quotaLimits
	q.set(deviceQuota("a", map[string]int64{"limits.nvidia.com/gpumem": 1000, "limits.nvidia.com/gpucores": 50}), names)
	q.set(deviceQuota("b", map[string]int64{"limits.nvidia.com/gpumem": 2000}), names)
	if v, ok := q.limit("default", "nvidia.com/gpumem"); !ok || v != 2000 {
		t.Errorf("memory limit %d %v, want the last quota's 2000", v, ok)
	}
	q.clear(deviceQuota("b", map[string]int64{"limits.nvidia.com/gpumem": 2000}), names)
	if _, ok := q.limit("default", "nvidia.com/gpumem"); ok {
		t.Error("memory limit still set after the quota that set it last was deleted")
	}
	if v, ok := q.limit("default", "nvidia.com/gpucores"); !ok || v != 50 {
		t.Errorf("cores limit %d %v, want 50 kept", v, ok)
	}
	if _, ok := q.limit("other", "nvidia.com/gpucores"); ok {
		t.Error("a quota of default limits another namespace")
	}
}

// waitForQuota waits until the plugin has read the harness's quota.
func waitForQuota(t *testing.T, h *harness, want bool) {
	t.Helper()
	if !want {
		return
	}
	for i := 0; i < 1000; i++ {
		if _, ok := h.plugin.quotas.limit("default", "nvidia.com/gpumem"); ok {
			return
		}
		if _, ok := h.plugin.quotas.limit("default", "nvidia.com/gpucores"); ok {
			return
		}
		if _, err := h.client.CoreV1().ResourceQuotas("default").List(h.ctx, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
