package webhook

import (
	"context"
	"strings"
	"testing"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// TestAdmissionsMetric checks that each decision is counted once under
// its result.
func TestAdmissionsMetric(t *testing.T) {
	tests := []struct {
		result string
		reader client.Reader
		req    func(t *testing.T) admission.Request
	}{
		{resultMutated, nil, podRequest(newPod(limits("nvidia.com/gpumem", "1000")))},
		{resultUntouched, nil, podRequest(newPod())},
		{resultInvalid, nil, podRequest(newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "101")))},
		{resultInvalid, nil, podRequest(newPod(noContainers()))},
		{resultPrivileged, nil, podRequest(newPod(limits("nvidia.com/gpu", "1"), privilegedLast()))},
		{resultNodeName, nil, podRequest(newPod(limits("nvidia.com/gpu", "1"), nodeName("n")))},
		{resultQuota, fake.NewClientBuilder().WithObjects(memoryQuota("q", "10")).Build(), podRequest(newPod(limits("nvidia.com/gpumem", "11")))},
		{resultError, failingReader{}, podRequest(newPod(limits("nvidia.com/gpumem", "11")))},
		{resultBadRequest, nil, func(*testing.T) admission.Request { return admission.Request{} }},
	}
	for _, tt := range tests {
		t.Run(tt.result, func(t *testing.T) {
			h, err := NewHandler(testConfig(t), tt.reader)
			if err != nil {
				t.Fatal(err)
			}
			before := make(map[string]float64)
			for _, r := range []string{resultMutated, resultUntouched, resultInvalid, resultPrivileged, resultNodeName, resultQuota, resultError, resultBadRequest} {
				before[r] = testutil.ToFloat64(admissionsTotal.WithLabelValues(r))
			}
			h.Handle(context.Background(), tt.req(t))
			for r, b := range before {
				want := b
				if r == tt.result {
					want++
				}
				if got := testutil.ToFloat64(admissionsTotal.WithLabelValues(r)); got != want {
					t.Errorf("%s = %v, want %v", r, got, want)
				}
			}
		})
	}
}

// TestUnservableCounted: a refusal for a shape the vendor's device plugin
// cannot serve counts as refused_unservable.
func TestUnservableCounted(t *testing.T) {
	cfg := testConfig(t)
	withVendor(t, devices.Config{Name: "cambricon"})(&cfg)
	h, err := NewHandler(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := testutil.ToFloat64(admissionsTotal.WithLabelValues(resultUnservable))
	resp := h.Handle(context.Background(), createRequest(t, newPod(limits("cambricon.com/vmlu", "1"))))
	if resp.Allowed || !strings.Contains(resp.Result.Message, "must set both") {
		t.Fatalf("response %+v, want a refusal naming the missing resources", resp.Result)
	}
	if got := testutil.ToFloat64(admissionsTotal.WithLabelValues(resultUnservable)); got != before+1 {
		t.Errorf("%s = %v, want %v", resultUnservable, got, before+1)
	}
}

func podRequest(obj *corev1.Pod) func(t *testing.T) admission.Request {
	return func(t *testing.T) admission.Request { return createRequest(t, obj) }
}
