// Package hamidra models HAMi-DRA's admission webhook, the other route to
// GPU sharing on DRA nodes that the local cluster runs for comparison
// (hami-local -hami-dra): Project-HAMi/HAMi-DRA at 0213e66 (chart
// hami-dra-0.0.1), pkg/webhook/dra mutating.go and validating.go with the
// chart's device-config defaults. It is written from what that webhook
// does, not from its code:
//
//   - on pod CREATE, for each container (init containers aside) whose
//     limits name nvidia.com/gpu, it creates a ResourceClaim named
//     <namespace>-<pod>-<container> in the pod's namespace with one exact
//     request "gpu" of DeviceClass hami-core-gpu.project-hami.io: count
//     the gpu limit, a CEL selector on the type attribute hami-gpu,
//     capacity.requests "cores" = the nvidia.com/gpucores limit and
//     "memory" = the nvidia.com/gpumem limit times 1Mi (bytes) when the
//     container asks them, and a selector on uuid for the pod annotation
//     nvidia.com/use-gpuuuid and on productName for nvidia.com/use-gputype;
//     it removes those three resources from the container's requests and
//     limits, points the container's resources.claims at the claim, adds
//     the claim to spec.resourceClaims and labels the pod hami.io/dra=true;
//     nothing else (gpumem-percentage, the scheduler name, init
//     containers) is touched;
//   - on pod DELETE of a pod labelled hami.io/dra it deletes the claims of
//     that naming (a missing one is fine; failures are only logged).
//
// Its quirks are kept, since a benchmark against it measures them: the
// claim is created during admission, dry runs included (sideEffects:
// None notwithstanding); a pod created with generateName has no name yet
// at admission, so its claims are named <namespace>--<container> and a
// second such pod is refused (the claim exists: HTTP 500); a claim left by
// a pod whose creation failed afterwards stays.
//
// The pods it mutates ask no HAMi resource any more: kube-scheduler's
// DynamicResources allocates their claims (in any profile that runs it),
// on nodes publishing HAMi's DRA driver's devices.
package hamidra

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Version is the HAMi-DRA release the model follows.
const Version = "Project-HAMi/HAMi-DRA 0213e66 (chart hami-dra-0.0.1, 2025-12-19)"

// What the webhook writes.
const (
	// DeviceClass is the class its claims request, HAMi's DRA driver's.
	DeviceClass = "hami-core-gpu.project-hami.io"
	// DeviceType is the type attribute its selector requires.
	DeviceType = "hami-gpu"
	// Label marks the pods it mutated (constants.DraLabel).
	Label = "hami.io/dra"
	// RequestName is the claims' one request.
	RequestName = "gpu"
	// UseUUIDAnnotation and UseTypeAnnotation are the pod annotations it
	// turns into selectors.
	UseUUIDAnnotation = "nvidia.com/use-gpuuuid"
	UseTypeAnnotation = "nvidia.com/use-gputype"
)

// Config names the resources it reads (the chart's device-config.yaml
// nvidia section).
type Config struct {
	CountName, MemoryName, CoresName corev1.ResourceName
}

// ChartConfig is the chart's default: nvidia.com/gpu, gpumem, gpucores.
func ChartConfig() Config {
	return Config{CountName: "nvidia.com/gpu", MemoryName: "nvidia.com/gpumem", CoresName: "nvidia.com/gpucores"}
}

// ClaimName is the claim the webhook makes for a container of a pod.
func ClaimName(namespace, pod, container string) string {
	return fmt.Sprintf("%s-%s-%s", namespace, pod, container)
}

// Mutate is the webhook's change to a pod at creation: it returns the
// claims to create, one per container asking cfg.CountName, and changes
// pod as the webhook does (nil claims: the pod is left as it was).
func Mutate(pod *corev1.Pod, cfg Config) []*resourceapi.ResourceClaim {
	var claims []*resourceapi.ResourceClaim
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		count, ok := c.Resources.Limits[cfg.CountName]
		if !ok {
			continue
		}
		claim := newClaim(ClaimName(pod.Namespace, pod.Name, c.Name), pod.Namespace)
		exact := claim.Spec.Devices.Requests[0].Exactly
		exact.Count = count.Value()
		dropResource(c, cfg.CountName)
		if cores, ok := c.Resources.Limits[cfg.CoresName]; ok {
			exact.Capacity.Requests["cores"] = cores
			dropResource(c, cfg.CoresName)
		}
		if mem, ok := c.Resources.Limits[cfg.MemoryName]; ok {
			exact.Capacity.Requests["memory"] = *resource.NewQuantity(mem.Value()*1024*1024, resource.DecimalSI)
			dropResource(c, cfg.MemoryName)
		}
		if uuid, ok := pod.Annotations[UseUUIDAnnotation]; ok {
			exact.Selectors = append(exact.Selectors, celSelector(fmt.Sprintf(`device.attributes[%q].uuid == %q`, DeviceClass, uuid)))
		}
		if model, ok := pod.Annotations[UseTypeAnnotation]; ok {
			exact.Selectors = append(exact.Selectors, celSelector(fmt.Sprintf(`device.attributes[%q].productName == %q`, DeviceClass, model)))
		}
		c.Resources.Claims = []corev1.ResourceClaim{{Name: claim.Name}}
		pod.Spec.ResourceClaims = append(pod.Spec.ResourceClaims, corev1.PodResourceClaim{Name: claim.Name, ResourceClaimName: &claim.Name})
		claims = append(claims, claim)
	}
	if len(claims) > 0 {
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		pod.Labels[Label] = "true"
	}
	return claims
}

// newClaim is the claim skeleton the webhook fills.
func newClaim(name, namespace string) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: RequestName,
			Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: DeviceClass,
				AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
				Capacity:        &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{}},
				Selectors:       []resourceapi.DeviceSelector{celSelector(fmt.Sprintf(`device.attributes[%q].type == %q`, DeviceClass, DeviceType))},
			},
		}}}},
	}
}

func celSelector(expr string) resourceapi.DeviceSelector {
	return resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: expr}}
}

// dropResource removes the resource from the container's requests and
// limits.
func dropResource(c *corev1.Container, name corev1.ResourceName) {
	delete(c.Resources.Requests, name)
	delete(c.Resources.Limits, name)
}

// Handlers are the webhook's two admission handlers, with the client it
// creates and deletes claims with.
type Handlers struct {
	Client  kubernetes.Interface
	Config  Config
	decoder admission.Decoder
}

// NewHandlers returns the handlers for client and cfg.
func NewHandlers(client kubernetes.Interface, cfg Config) *Handlers {
	return &Handlers{Client: client, Config: cfg, decoder: admission.NewDecoder(scheme.Scheme)}
}

// Mutating is the /mutate handler (pod CREATE): it creates each claim as
// it is made, and answers the pod's patch; a claim it cannot create fails
// the admission (500).
func (h *Handlers) Mutating() admission.Handler {
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		pod := &corev1.Pod{}
		if err := h.decoder.Decode(req, pod); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		claims := Mutate(pod, h.Config)
		if len(claims) == 0 {
			return admission.Allowed("")
		}
		for _, claim := range claims {
			if _, err := h.Client.ResourceV1().ResourceClaims(claim.Namespace).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
				return admission.Errored(http.StatusInternalServerError, fmt.Errorf("failed to create ResourceClaim %s/%s: %w", claim.Namespace, claim.Name, err))
			}
		}
		patched, err := json.Marshal(pod)
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		return admission.PatchResponseFromRaw(req.Object.Raw, patched)
	})
}

// Validating is the /validate handler (pod DELETE): it deletes the claims
// of a pod it mutated, one per container, and always allows.
func (h *Handlers) Validating() admission.Handler {
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		pod := &corev1.Pod{}
		if err := json.Unmarshal(req.OldObject.Raw, pod); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if _, ok := pod.Labels[Label]; !ok {
			return admission.Allowed("")
		}
		for _, c := range pod.Spec.Containers {
			name := ClaimName(pod.Namespace, pod.Name, c.Name)
			err := h.Client.ResourceV1().ResourceClaims(pod.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				klog.FromContext(ctx).Info("HAMi-DRA webhook model cannot delete a ResourceClaim", "claim", klog.KRef(pod.Namespace, name), "err", err)
			}
		}
		return admission.Allowed("")
	})
}
