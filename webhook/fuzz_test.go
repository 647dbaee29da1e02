package webhook

import (
	"encoding/json"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// FuzzHandle feeds arbitrary pod bodies to the admission handler: it must
// answer every one (allowed, denied or an error code) and never panic, and
// a patch it returns must be valid JSON patch operations.
func FuzzHandle(f *testing.F) {
	for _, p := range []any{
		newPod(limits("nvidia.com/gpumem", "3000")),
		newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "50")),
		newPod(limits("nvidia.com/gpu", "0")),
		newPod(limits("nvidia.com/gpucores", "101", "nvidia.com/priority", "1")),
		map[string]any{"spec": map[string]any{"containers": nil}},
	} {
		raw, err := json.Marshal(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Add([]byte(`{"spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"1e40"}}}]}}`))
	f.Add([]byte(`{"metadata":{"annotations":{"nvidia.com/numa-bind":"maybe"}},"spec":{"initContainers":[{}],"containers":[{}]}}`))
	f.Add([]byte(`not json`))
	cfg := Config{SchedulerName: DefaultSchedulerName, TakeOverDefaultScheduler: true, Registry: testRegistry(f)}
	h, err := NewHandler(cfg, fake.NewClientBuilder().Build())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			UID:       "fuzz",
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Namespace: testNamespace,
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: body},
		}}
		resp := h.Handle(t.Context(), req)
		if resp.Result == nil && !resp.Allowed {
			t.Fatalf("denied without a result: %+v", resp)
		}
		for _, op := range resp.Patches {
			if op.Operation == "" || op.Path == "" {
				t.Fatalf("patch operation without op or path: %+v", op)
			}
		}
	})
}
