package webhook

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	toolscache "k8s.io/client-go/tools/cache"
)

// TestPodTransform checks that the cache keeps of a pod exactly what the
// quota rule reads: the same scope and charging decisions, the same
// holdings, and nothing else of the spec.
func TestPodTransform(t *testing.T) {
	cfg := testConfig(t)
	transform := podTransform(cfg.Registry)
	deletedAt := metav1.Now()
	grace := int64(30)
	deadline := int64(600)
	tests := []struct {
		name string
		pod  *corev1.Pod
		want *corev1.Pod
	}{
		{
			name: "running GPU pod",
			pod: newPod(phase(corev1.PodRunning), priorityClass("high"), nodeName("node-1"),
				annotation(allocated, ";GPU-0,NVIDIA,1000,30:;"), annotation("hami.io/vgpu-devices-to-allocate", ";;"),
				annotation("kubectl.kubernetes.io/last-applied-configuration", "{...}"), label("app", "train"),
				limits("cpu", "1", "nvidia.com/gpu", "1")),
			want: &corev1.Pod{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
				ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: testNamespace, Annotations: map[string]string{allocated: ";GPU-0,NVIDIA,1000,30:;"}},
				Spec:       corev1.PodSpec{PriorityClassName: "high", NodeName: "node-1", SchedulerName: corev1.DefaultSchedulerName},
				Status:     corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable},
			},
		},
		{
			name: "best-effort pod being deleted, with a deadline and cross-namespace affinity",
			pod: func() *corev1.Pod {
				p := newPod(phase(corev1.PodPending))
				p.DeletionTimestamp = &deletedAt
				p.DeletionGracePeriodSeconds = &grace
				p.Spec.ActiveDeadlineSeconds = &deadline
				p.Spec.Affinity = &corev1.Affinity{
					NodeAffinity: &corev1.NodeAffinity{},
					PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
						{TopologyKey: "zone", Namespaces: []string{"other"}},
					}},
				}
				return p
			}(),
			want: &corev1.Pod{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
				ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: testNamespace, DeletionTimestamp: &deletedAt, DeletionGracePeriodSeconds: &grace},
				Spec: corev1.PodSpec{
					SchedulerName: corev1.DefaultSchedulerName, ActiveDeadlineSeconds: &deadline,
					Affinity: &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
						{TopologyKey: "zone", Namespaces: []string{"other"}},
					}}},
				},
				Status: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBestEffort},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := transform(tt.pod)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("transform:\n got %+v\nwant %+v", got, tt.want)
			}
			// The slim pod must lead to the same quota decisions.
			q := NewQuotaChecker(nil, cfg.Registry)
			rq := memoryQuota("q", "1")
			for _, scope := range []corev1.ResourceQuotaScope{
				corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeBestEffort,
				corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopeCrossNamespacePodAffinity,
			} {
				rq.Spec.Scopes = []corev1.ResourceQuotaScope{scope}
				full, err1 := q.inScope(rq, tt.pod)
				slim, err2 := q.inScope(rq, got.(*corev1.Pod))
				if err1 != nil || err2 != nil || full != slim {
					t.Errorf("scope %s: full pod %v (%v), slim pod %v (%v)", scope, full, err1, slim, err2)
				}
			}
			v := cfg.Registry.Vendors()[0]
			fullHeld, _ := holdingOf(v, tt.pod)
			slimHeld, _ := holdingOf(v, got.(*corev1.Pod))
			if fullHeld != slimHeld {
				t.Errorf("holding: full %+v, slim %+v", fullHeld, slimHeld)
			}
		})
	}
}

func TestPodTransformPassesOtherObjects(t *testing.T) {
	tombstone := toolscache.DeletedFinalStateUnknown{Key: "team-a/p", Obj: newPod()}
	got, err := podTransform(testConfig(t).Registry)(tombstone)
	if err != nil || !reflect.DeepEqual(got, tombstone) {
		t.Errorf("transform(tombstone) = %v, %v", got, err)
	}
}

// TestChargedPodsSelector pins the field selector of the pod informer:
// terminal pods are not listed or watched.
func TestChargedPodsSelector(t *testing.T) {
	tests := []struct {
		phase corev1.PodPhase
		want  bool
	}{
		{corev1.PodPending, true},
		{corev1.PodRunning, true},
		{corev1.PodUnknown, true},
		{corev1.PodSucceeded, false},
		{corev1.PodFailed, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.phase), func(t *testing.T) {
			if got := chargedPods.Matches(fields.Set{"status.phase": string(tt.phase)}); got != tt.want {
				t.Errorf("matches = %v, want %v", got, tt.want)
			}
		})
	}
}
