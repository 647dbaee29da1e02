package hamidra

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func limits(kv ...any) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i].(string))] = *resource.NewQuantity(int64(kv[i+1].(int)), resource.DecimalSI)
	}
	return out
}

// HAMi-DRA's mutation: one claim per container asking nvidia.com/gpu, the
// count, cores and memory (MiB to bytes) as its request, the pod's
// selection annotations as selectors; the HAMi resources gone from the
// container; nothing for a pod asking none.
func TestMutate(t *testing.T) {
	tests := []struct {
		name       string
		pod        corev1.Pod
		wantClaims map[string]string // name -> "count cores memory selectors"
		wantLeft   map[string]corev1.ResourceList
	}{
		{name: "fractional: gpu, gpumem, gpucores",
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "c", Resources: corev1.ResourceRequirements{Limits: limits("nvidia.com/gpu", 1, "nvidia.com/gpumem", 3000, "nvidia.com/gpucores", 30, "cpu", 1)},
			}}}},
			wantClaims: map[string]string{"ns-p-c": "1 30 3145728000 1"},
			wantLeft:   map[string]corev1.ResourceList{"c": limits("cpu", 1)}},
		{name: "two cards, whole: no capacity asked; selection annotations",
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Annotations: map[string]string{
				UseUUIDAnnotation: "GPU-1", UseTypeAnnotation: "NVIDIA A100-SXM4-40GB"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					{Name: "a", Resources: corev1.ResourceRequirements{Limits: limits("nvidia.com/gpu", 2)}},
					{Name: "b"},
				}}},
			wantClaims: map[string]string{"ns-p-a": "2 - - 3"},
			wantLeft:   map[string]corev1.ResourceList{"a": {}, "b": nil}},
		{name: "generateName: no name yet at admission",
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", GenerateName: "web-"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "c", Resources: corev1.ResourceRequirements{Limits: limits("nvidia.com/gpu", 1, "nvidia.com/gpumem-percentage", 50)},
			}}}},
			wantClaims: map[string]string{"ns--c": "1 - - 1"},
			wantLeft:   map[string]corev1.ResourceList{"c": limits("nvidia.com/gpumem-percentage", 50)}},
		{name: "no GPU asked: untouched",
			pod:      corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}},
			wantLeft: map[string]corev1.ResourceList{"c": nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := tt.pod.DeepCopy()
			claims := Mutate(pod, ChartConfig())
			got := map[string]string{}
			for _, c := range claims {
				req := c.Spec.Devices.Requests[0]
				e := req.Exactly
				q := func(name resourceapi.QualifiedName) string {
					if v, ok := e.Capacity.Requests[name]; ok {
						return strconv.FormatInt(v.Value(), 10)
					}
					return "-"
				}
				got[c.Name] = fmt.Sprintf("%d %s %s %d", e.Count, q("cores"), q("memory"), len(e.Selectors))
				if c.Namespace != "ns" || req.Name != RequestName || e.DeviceClassName != DeviceClass || e.AllocationMode != resourceapi.DeviceAllocationModeExactCount {
					t.Errorf("claim %s: %+v", c.Name, c)
				}
			}
			if diff := cmp.Diff(tt.wantClaims, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("claims (-want +got):\n%s", diff)
			}
			for _, c := range pod.Spec.Containers {
				if diff := cmp.Diff(tt.wantLeft[c.Name], c.Resources.Limits); diff != "" {
					t.Errorf("container %s limits (-want +got):\n%s", c.Name, diff)
				}
			}
			if len(claims) == 0 {
				if !cmp.Equal(&tt.pod, pod) {
					t.Errorf("a pod asking no GPU was changed")
				}
				return
			}
			if pod.Labels[Label] != "true" || len(pod.Spec.ResourceClaims) != len(claims) || *pod.Spec.ResourceClaims[0].ResourceClaimName != claims[0].Name {
				t.Errorf("pod %+v: want the label and the claims in spec.resourceClaims", pod)
			}
		})
	}
}

// The handler creates the claims and answers a patch; a claim it cannot
// create (a second generateName pod's) fails the pod's admission.
func TestMutatingHandler(t *testing.T) {
	client := fake.NewClientset()
	h := NewHandlers(client, ChartConfig()).Mutating()
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", GenerateName: "web-"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "c", Resources: corev1.ResourceRequirements{Limits: limits("nvidia.com/gpu", 1)},
	}}}}
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Namespace: "ns", Object: runtime.RawExtension{Raw: raw},
		Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
	}}
	first := h.Handle(context.Background(), req)
	if !first.Allowed || len(first.Patches) == 0 {
		t.Fatalf("first pod: %+v, want allowed with a patch", first)
	}
	if _, err := client.ResourceV1().ResourceClaims("ns").Get(context.Background(), "ns--c", metav1.GetOptions{}); err != nil {
		t.Fatalf("claim not created: %v", err)
	}
	second := h.Handle(context.Background(), req)
	if second.Allowed || second.Result == nil || second.Result.Code != http.StatusInternalServerError {
		t.Errorf("second pod of the same generateName: %+v, want refused with 500", second)
	}
}
