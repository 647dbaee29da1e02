package webhook

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Handler is the admission.Handler for pod CREATE.
type Handler struct {
	cfg     Config
	decoder admission.Decoder
	// quota is nil when no quota is checked (tests of the other rules).
	quota *QuotaChecker
}

var _ admission.Handler = &Handler{}

// NewHandler returns the handler for cfg. reader reads the namespaces'
// ResourceQuotas and pods; nil disables the quota rule.
func NewHandler(cfg Config, reader client.Reader) (*Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	h := &Handler{cfg: cfg, decoder: admission.NewDecoder(scheme)}
	if reader != nil {
		h.quota = NewQuotaChecker(reader, cfg.Registry)
	}
	return h, nil
}

// Handle implements admission.Handler. It never panics on bad input: a
// request that is not a pod CREATE, or a pod that cannot be decoded, gets a
// 4xx review; a pod the rules refuse gets a denial that says why.
func (h *Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	resp, result := h.handle(ctx, req)
	admissionsTotal.WithLabelValues(result).Inc()
	return resp
}

// handle is Handle; result labels the outcome in the admissions metric.
func (h *Handler) handle(ctx context.Context, req admission.Request) (admission.Response, string) {
	if req.Kind.Group != "" || req.Kind.Kind != "Pod" {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("this webhook admits pods only but was sent kind %q; fix the rules of the MutatingWebhookConfiguration", req.Kind.Kind)), resultBadRequest
	}
	if req.Operation != admissionv1.Create || req.SubResource != "" {
		return admission.Allowed("only pod CREATE is mutated"), resultUntouched
	}
	pod := &corev1.Pod{}
	if err := h.decoder.Decode(req, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("the pod in the admission request cannot be decoded: %w", err)), resultBadRequest
	}
	// HAMi checks the containers before the scheduler name, so a pod of
	// another scheduler without containers is refused too.
	if len(pod.Spec.Containers) == 0 {
		return admission.Denied("pod has no containers; add at least one container to spec.containers"), resultInvalid
	}
	if !h.cfg.schedulerOwned(pod) {
		return admission.Allowed(fmt.Sprintf("pod belongs to scheduler %q", pod.Spec.SchedulerName)), resultUntouched
	}
	original, err := json.Marshal(pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err), resultError
	}
	m := h.cfg.mutatePod(pod)
	if m.err != nil {
		return admission.Errored(http.StatusInternalServerError, m.err), m.rule
	}
	if m.refusal != "" {
		return admission.Denied(m.refusal), m.rule
	}
	if !m.asks {
		// Env a vendor adds to every container (overwriteEnv, core
		// policy) still has to be patched in.
		return h.patch(original, pod, "pod asks for no managed device")
	}
	namespace := cmp.Or(req.Namespace, pod.Namespace)
	if h.quota != nil {
		refusal, err := h.quota.Check(ctx, namespace, pod, m.requests)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Quota check failed", "namespace", namespace)
			return admission.Errored(http.StatusInternalServerError, fmt.Errorf("device quota of namespace %s cannot be checked, retry shortly: %w", namespace, err)), resultError
		}
		if refusal != "" {
			return admission.Denied("exceeding resource quota: " + refusal), resultQuota
		}
	}
	return h.patch(original, pod, "")
}

// patch answers with the JSON patch from original to pod. The patch is the
// difference between the decoded pod before and after the rules, not
// between req.Object.Raw and the mutated pod: fields of the raw object
// that this build's k8s.io/api does not know (a newer API server) are then
// left alone instead of being removed. A pod the rules left as it was is
// allowed with reason unchanged (resultUntouched).
func (h *Handler) patch(original []byte, pod *corev1.Pod, unchanged string) (admission.Response, string) {
	mutated, err := json.Marshal(pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err), resultError
	}
	if unchanged != "" && bytes.Equal(original, mutated) {
		return admission.Allowed(unchanged), resultUntouched
	}
	return admission.PatchResponseFromRaw(original, mutated), resultMutated
}
