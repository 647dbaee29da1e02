package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/ascend"
)

func op(operation, path string, value any) jsonpatch.Operation {
	return jsonpatch.Operation{Operation: operation, Path: path, Value: value}
}

// Patch operations the rules produce, for the first regular container
// unless the path says otherwise.
var (
	setScheduler    = op("replace", "/spec/schedulerName", DefaultSchedulerName)
	addCount        = op("add", "/spec/containers/0/resources/limits/nvidia.com~1gpu", "1")
	addExclusive    = op("add", "/spec/containers/0/resources/limits/nvidia.com~1gpucores", "100")
	addPriorityEnv  = op("add", "/spec/containers/0/env", []any{map[string]any{"name": "CUDA_TASK_PRIORITY", "value": "1"}})
	setRuntimeClass = op("add", "/spec/runtimeClassName", "nvidia")
)

// ascendChip is the chart's Ascend910B3 chip with a runtime class.
func ascendChip(runtimeClass string) devices.Config {
	chip := ascend.DefaultConfigs()[2]
	chip.RuntimeClassName = runtimeClass
	return devices.Config{Name: "ascend", Vendor: chip}
}

// withVendor configures the registry with the given vendor configs.
func withVendor(t *testing.T, configs ...devices.Config) func(*Config) {
	return func(c *Config) { c.Registry = testRegistry(t, configs...) }
}

// TestHandleRules runs each admission rule through Handler.Handle: a CREATE
// request in, a JSON patch or a refusal out.
func TestHandleRules(t *testing.T) {
	tests := []struct {
		name   string
		config func(*Config)
		pod    *corev1.Pod
		// patch is the expected JSON patch of an allowed pod (nil: allowed
		// unchanged). refusal, when set, is a substring of the denial,
		// answered with code (403 when 0).
		patch   []jsonpatch.Operation
		refusal string
		code    int32
	}{
		{
			name:  "pod asking for nothing is left alone",
			pod:   newPod(limits("cpu", "1")),
			patch: nil,
		},
		{
			name:  "card with memory: only the scheduler name is set",
			pod:   newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "3000")),
			patch: []jsonpatch.Operation{setScheduler},
		},
		{
			name:  "only memory asked: the card count is added",
			pod:   newPod(limits("nvidia.com/gpumem", "3000")),
			patch: []jsonpatch.Operation{addCount, setScheduler},
		},
		{
			name:  "only cores asked: the card count is added",
			pod:   newPod(limits("nvidia.com/gpucores", "30")),
			patch: []jsonpatch.Operation{addCount, setScheduler},
		},
		{
			name: "only memory percentage asked: count added, and exclusive cores at 100 percent",
			pod:  newPod(limits("nvidia.com/gpumem-percentage", "100")),
			patch: []jsonpatch.Operation{
				addCount, addExclusive, setScheduler,
			},
		},
		{
			name:  "whole card (no memory, no cores): exclusive cores",
			pod:   newPod(limits("nvidia.com/gpu", "1")),
			patch: []jsonpatch.Operation{addExclusive, setScheduler},
		},
		{
			name:  "part of a card's memory: no exclusive cores",
			pod:   newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "50")),
			patch: []jsonpatch.Operation{setScheduler},
		},
		{
			name:  "priority becomes CUDA_TASK_PRIORITY",
			pod:   newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000", "nvidia.com/priority", "1")),
			patch: []jsonpatch.Operation{addPriorityEnv, setScheduler},
		},
		{
			name: "init container asking is defaulted too",
			pod:  newPod(initContainer("warmup", "nvidia.com/gpumem", "1000")),
			patch: []jsonpatch.Operation{
				op("add", "/spec/initContainers/0/resources/limits/nvidia.com~1gpu", "1"), setScheduler,
			},
		},
		{
			name:  "second container asking, first not",
			pod:   newPod(container("gpu", "nvidia.com/gpucores", "20")),
			patch: []jsonpatch.Operation{op("add", "/spec/containers/1/resources/limits/nvidia.com~1gpu", "1"), setScheduler},
		},
		{
			name:  "empty schedulerName is taken over",
			pod:   newPod(schedulerName(""), limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000")),
			patch: []jsonpatch.Operation{op("add", "/spec/schedulerName", DefaultSchedulerName)},
		},
		{
			name:   "default-scheduler pod left alone when take-over is off",
			config: func(c *Config) { c.TakeOverDefaultScheduler = false },
			pod:    newPod(limits("nvidia.com/gpumem", "1000")),
			patch:  nil,
		},
		{
			// HAMi: only a non-empty name can be another scheduler.
			name:   "empty schedulerName is taken over even when take-over is off",
			config: func(c *Config) { c.TakeOverDefaultScheduler = false },
			pod:    newPod(schedulerName(""), limits("nvidia.com/gpumem", "1000")),
			patch:  []jsonpatch.Operation{addCount, op("add", "/spec/schedulerName", DefaultSchedulerName)},
		},
		{
			name:   "pod naming hami-scheduler is defaulted even when take-over is off",
			config: func(c *Config) { c.TakeOverDefaultScheduler = false },
			pod:    newPod(schedulerName(DefaultSchedulerName), limits("nvidia.com/gpumem", "1000")),
			patch:  []jsonpatch.Operation{addCount},
		},
		{
			name:  "pod naming another scheduler is left alone",
			pod:   newPod(schedulerName("volcano"), limits("nvidia.com/gpumem", "1000")),
			patch: nil,
		},
		{
			name:   "configured scheduler name is written",
			config: func(c *Config) { c.SchedulerName = "gpu-scheduler" },
			pod:    newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000")),
			patch:  []jsonpatch.Operation{op("replace", "/spec/schedulerName", "gpu-scheduler")},
		},
		{
			name: "renamed resources of the vendor config are the ones defaulted",
			config: func(c *Config) {
				c.Registry = testRegistry(t, devices.Config{Name: "nvidia", ResourceCountName: "example.com/vgpu", ResourceMemoryName: "example.com/vgpu-memory"})
			},
			pod: newPod(limits("example.com/vgpu-memory", "1000", "nvidia.com/gpumem", "5")),
			patch: []jsonpatch.Operation{
				op("add", "/spec/containers/0/resources/limits/example.com~1vgpu", "1"), setScheduler,
			},
		},
		{
			// Only namespaces opt out; a tenant's own pod label must not
			// skip the quota and defaults.
			name:  "a pod's own hami.io/webhook=ignore label does not opt it out",
			pod:   newPod(label(devices.WebhookIgnoreLabel, IgnoreValue), limits("nvidia.com/gpumem", "1000")),
			patch: []jsonpatch.Operation{addCount, setScheduler},
		},
		{
			name:  "other values of the ignore label do not opt out",
			pod:   newPod(label(devices.WebhookIgnoreLabel, "yes"), limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000")),
			patch: []jsonpatch.Operation{setScheduler},
		},
		{
			name:   "a shape the vendor's device plugin cannot serve is refused with the plugin's reason",
			config: withVendor(t, devices.Config{Name: "cambricon"}),
			pod: newPod(container("a", "cambricon.com/vmlu", "1", "cambricon.com/mlu.smlu.vmemory", "20", "cambricon.com/mlu.smlu.vcore", "10"),
				container("b", "cambricon.com/vmlu", "1", "cambricon.com/mlu.smlu.vmemory", "20", "cambricon.com/mlu.smlu.vcore", "10")),
			refusal: "containers a, b each ask for an MLU; the plugin serves one MLU container per pod (the node's device plugin, cambricon-k8s-device-plugin v2.0.23, cannot serve it)",
		},
		{
			name:    "privileged container asking for a device is refused",
			pod:     newPod(limits("nvidia.com/gpu", "1"), privilegedLast()),
			refusal: `container main is privileged; a privileged container sees every device on the node and escapes the sharing limits, so a pod that asks for shared NVIDIA devices`,
		},
		{
			// HAMi: any privileged container and any device request.
			name:    "privileged sidecar that asks nothing refuses a device pod",
			pod:     newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"), container("agent", "cpu", "1"), privilegedLast()),
			refusal: "container agent is privileged",
		},
		{
			name: "the first privileged container is named, init containers first",
			pod: newPod(container("agent", "cpu", "1"), privilegedLast(),
				initContainer("setup", "cpu", "1"), privilegedInit(), container("gpu", "nvidia.com/gpumem", "1000")),
			refusal: "container setup is privileged",
		},
		{
			name:    "privileged init container refuses a pod whose device request is in an init container",
			pod:     newPod(initContainer("warmup", "nvidia.com/gpumem", "1000"), privilegedInit()),
			refusal: "container warmup is privileged",
		},
		{
			name:  "privileged pod asking for nothing is left alone",
			pod:   newPod(limits("cpu", "1"), privilegedLast()),
			patch: nil,
		},
		{
			name:    "pod asking for a device with nodeName is refused",
			pod:     newPod(nodeName("gpu-node-1"), limits("nvidia.com/gpu", "1")),
			refusal: `pod has node assigned: spec.nodeName "gpu-node-1" skips hami-scheduler`,
		},
		{
			name:  "pod with nodeName asking nothing is left alone",
			pod:   newPod(nodeName("gpu-node-1"), limits("cpu", "1")),
			patch: nil,
		},
		{
			name:    "memory percentage above 100 is an admission error",
			pod:     newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "150")),
			refusal: `container main: nvidia.com/gpumem-percentage 150 is above 100`,
			code:    http.StatusInternalServerError,
		},
		{
			name:    "negative memory percentage is an admission error",
			pod:     newPod(limits("nvidia.com/gpumem-percentage", "-1")),
			refusal: `container main: nvidia.com/gpumem-percentage -1 is not a whole number`,
			code:    http.StatusInternalServerError,
		},
		{
			name:    "memory percentage of a container asking no card is checked too",
			pod:     newPod(limits("nvidia.com/gpumem-percentage", "101")),
			refusal: `container main: nvidia.com/gpumem-percentage 101 is above 100`,
			code:    http.StatusInternalServerError,
		},
		{
			name:    "fractional card count is an admission error",
			pod:     newPod(limits("nvidia.com/gpu", "500m")),
			refusal: `container main: nvidia.com/gpu 500m is not a whole number`,
			code:    http.StatusInternalServerError,
		},
		{
			// As in HAMi, a numa-bind that is not a boolean means no binding.
			name:  "unreadable numa-bind is allowed",
			pod:   newPod(annotation("nvidia.com/numa-bind", "maybe"), limits("nvidia.com/gpu", "1")),
			patch: []jsonpatch.Operation{addExclusive, setScheduler},
		},
		{
			name:    "pod without containers is refused",
			pod:     newPod(noContainers()),
			refusal: "pod has no containers",
		},
		{
			// HAMi checks the containers before the scheduler name.
			name:    "pod of another scheduler without containers is refused",
			pod:     newPod(noContainers(), schedulerName("volcano")),
			refusal: "pod has no containers",
		},
		{
			name:  "nvidia.com/gpu: 0 is a GPU container: exclusive cores and the scheduler",
			pod:   newPod(limits("nvidia.com/gpu", "0")),
			patch: []jsonpatch.Operation{addExclusive, setScheduler},
		},
		{
			// No exclusive cores here (gpumem given): the count in limits
			// alone makes it a GPU container.
			name:  "nvidia.com/gpu: 0 with gpumem is a GPU container: the scheduler is set",
			pod:   newPod(limits("nvidia.com/gpu", "0", "nvidia.com/gpumem", "1000")),
			patch: []jsonpatch.Operation{setScheduler},
		},
		{
			name:   "runtime class is set on a GPU pod that names none",
			config: withVendor(t, devices.Config{Name: "nvidia", RuntimeClassName: "nvidia"}),
			pod:    newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000")),
			patch:  []jsonpatch.Operation{setRuntimeClass, setScheduler},
		},
		{
			// DefaultInPod, not Default: the pod's runtime class is set
			// and the memory rounded up to the template in limits and
			// requests.
			name:   "Ascend: DefaultInPod rounds memory and sets the chip's runtime class",
			config: withVendor(t, devices.Config{Name: "nvidia"}, ascendChip("ascend")),
			pod:    newPod(limits("huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-memory", "2000")),
			patch: []jsonpatch.Operation{
				op("replace", "/spec/containers/0/resources/limits/huawei.com~1Ascend910B3-memory", "16384"),
				op("add", "/spec/containers/0/resources/requests", map[string]any{"huawei.com/Ascend910B3-memory": "16384"}),
				op("add", "/spec/runtimeClassName", "ascend"),
				setScheduler,
			},
		},
		{
			name:    "Ascend: several vNPUs in hard split are refused",
			config:  withVendor(t, ascendChip("")),
			pod:     newPod(limits("huawei.com/Ascend910B3", "2", "huawei.com/Ascend910B3-memory", "2000")),
			refusal: "vNPU not supported for multiple devices",
			code:    http.StatusInternalServerError, // HAMi's MutateAdmission error
		},
		{
			name:   "NVIDIA and Hygon in one pod: each vendor defaults its container",
			config: withVendor(t, devices.Config{Name: "nvidia"}, devices.Config{Name: "hygon"}),
			pod:    newPod(limits("nvidia.com/gpumem", "1000"), container("dcu", "hygon.com/dcunum", "1")),
			patch:  []jsonpatch.Operation{addCount, setScheduler},
		},
		{
			name:   "runtime class is set for nvidia.com/gpu: 0",
			config: withVendor(t, devices.Config{Name: "nvidia", RuntimeClassName: "nvidia"}),
			pod:    newPod(limits("nvidia.com/gpu", "0")),
			patch:  []jsonpatch.Operation{addExclusive, setRuntimeClass, setScheduler},
		},
		{
			name:   "runtime class is set when only an init container asks",
			config: withVendor(t, devices.Config{Name: "nvidia", RuntimeClassName: "nvidia"}),
			pod:    newPod(initContainer("warmup", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000")),
			patch:  []jsonpatch.Operation{setRuntimeClass, setScheduler},
		},
		{
			name:   "the pod's own runtime class is kept",
			config: withVendor(t, devices.Config{Name: "nvidia", RuntimeClassName: "nvidia"}),
			pod:    newPod(runtimeClass("kata"), limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000")),
			patch:  []jsonpatch.Operation{setScheduler},
		},
		{
			name:   "no runtime class on a pod asking for nothing",
			config: withVendor(t, devices.Config{Name: "nvidia", RuntimeClassName: "nvidia"}),
			pod:    newPod(limits("cpu", "1")),
			patch:  nil,
		},
		{
			name:   "no runtime class when a memory-only container asks no card (defaultCount 0)",
			config: withVendor(t, devices.Config{Name: "nvidia", RuntimeClassName: "nvidia", DefaultCount: ptr.To[int32](0)}),
			pod:    newPod(limits("nvidia.com/gpumem", "1000")),
			patch:  nil,
		},
		{
			name:   "overwriteEnv: containers asking no card, init containers too, get NVIDIA_VISIBLE_DEVICES=none",
			config: withVendor(t, devices.Config{Name: "nvidia", OverwriteEnv: true}),
			pod:    newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"), container("agent", "cpu", "1"), initContainer("setup", "cpu", "1")),
			patch: []jsonpatch.Operation{
				op("add", "/spec/containers/1/env", []any{map[string]any{"name": "NVIDIA_VISIBLE_DEVICES", "value": "none"}}),
				op("add", "/spec/initContainers/0/env", []any{map[string]any{"name": "NVIDIA_VISIBLE_DEVICES", "value": "none"}}),
				setScheduler,
			},
		},
		{
			name:   "overwriteEnv patches a pod that asks for no device, and keeps its scheduler",
			config: withVendor(t, devices.Config{Name: "nvidia", OverwriteEnv: true}),
			pod:    newPod(limits("cpu", "1")),
			patch:  []jsonpatch.Operation{op("add", "/spec/containers/0/env", []any{map[string]any{"name": "NVIDIA_VISIBLE_DEVICES", "value": "none"}})},
		},
		{
			name:   "overwriteEnv leaves pods of another scheduler alone",
			config: withVendor(t, devices.Config{Name: "nvidia", OverwriteEnv: true}),
			pod:    newPod(schedulerName("volcano"), limits("cpu", "1")),
			patch:  nil,
		},
		{
			name:   "core policy force: every container, GPU or not, init too",
			config: withVendor(t, devices.Config{Name: "nvidia", CorePolicy: "force"}),
			pod:    newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"), container("agent", "cpu", "1"), initContainer("setup", "cpu", "1")),
			patch: []jsonpatch.Operation{
				op("add", "/spec/containers/0/env", []any{map[string]any{"name": "GPU_CORE_UTILIZATION_POLICY", "value": "force"}}),
				op("add", "/spec/containers/1/env", []any{map[string]any{"name": "GPU_CORE_UTILIZATION_POLICY", "value": "force"}}),
				op("add", "/spec/initContainers/0/env", []any{map[string]any{"name": "GPU_CORE_UTILIZATION_POLICY", "value": "force"}}),
				setScheduler,
			},
		},
		{
			name:   "core policy disable on a pod that asks for no device",
			config: withVendor(t, devices.Config{Name: "nvidia", CorePolicy: "disable"}),
			pod:    newPod(limits("cpu", "1")),
			patch:  []jsonpatch.Operation{op("add", "/spec/containers/0/env", []any{map[string]any{"name": "GPU_CORE_UTILIZATION_POLICY", "value": "disable"}})},
		},
		{
			name:   "core policy default adds nothing",
			config: withVendor(t, devices.Config{Name: "nvidia", CorePolicy: "default"}),
			pod:    newPod(limits("cpu", "1")),
			patch:  nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			if tt.config != nil {
				tt.config(&cfg)
			}
			h, err := NewHandler(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			req := createRequest(t, tt.pod)
			resp := h.Handle(context.Background(), req)
			if tt.refusal != "" {
				code := tt.code
				if code == 0 {
					code = http.StatusForbidden
				}
				assertRefused(t, resp, code, tt.refusal)
				return
			}
			assertPatch(t, req, resp, tt.patch)
		})
	}
}

// TestHandleBadRequests covers requests that are not a pod CREATE or whose
// object cannot be read: a 4xx review or an untouched pod, never a panic.
func TestHandleBadRequests(t *testing.T) {
	deployment := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}}
	tests := []struct {
		name    string
		req     func(t *testing.T) admission.Request
		allowed bool
		code    int32
		message string
	}{
		{
			name: "wrong kind",
			req: func(t *testing.T) admission.Request {
				r := createRequest(t, deployment)
				r.Kind = metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
				return r
			},
			code:    http.StatusBadRequest,
			message: `admits pods only but was sent kind "Deployment"`,
		},
		{
			name: "empty request",
			req: func(t *testing.T) admission.Request {
				return admission.Request{}
			},
			code:    http.StatusBadRequest,
			message: "admits pods only",
		},
		{
			name: "no object",
			req: func(t *testing.T) admission.Request {
				r := createRequest(t, newPod())
				r.Object.Raw = nil
				return r
			},
			code:    http.StatusBadRequest,
			message: "cannot be decoded",
		},
		{
			name: "object is not JSON",
			req: func(t *testing.T) admission.Request {
				r := createRequest(t, newPod())
				r.Object.Raw = []byte(`{"spec": [`)
				return r
			},
			code:    http.StatusBadRequest,
			message: "cannot be decoded",
		},
		{
			name: "object of another kind under a pod request",
			req: func(t *testing.T) admission.Request {
				return admission.Request{AdmissionRequest: createRequest(t, deployment).AdmissionRequest}
			},
			code:    http.StatusBadRequest,
			message: "cannot be decoded",
		},
		{
			name: "containers of the wrong type",
			req: func(t *testing.T) admission.Request {
				r := createRequest(t, newPod())
				r.Object.Raw = []byte(`{"apiVersion":"v1","kind":"Pod","spec":{"containers":"gpu"}}`)
				return r
			},
			code:    http.StatusBadRequest,
			message: "cannot be decoded",
		},
		{
			name: "update is let through untouched",
			req: func(t *testing.T) admission.Request {
				r := createRequest(t, newPod(limits("nvidia.com/gpumem", "1000")))
				r.Operation = admissionv1.Update
				return r
			},
			allowed: true,
			code:    http.StatusOK,
		},
		{
			name: "subresource is let through untouched",
			req: func(t *testing.T) admission.Request {
				r := createRequest(t, newPod(limits("nvidia.com/gpumem", "1000")))
				r.SubResource = "status"
				return r
			},
			allowed: true,
			code:    http.StatusOK,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := NewHandler(testConfig(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp := h.Handle(context.Background(), tt.req(t))
			if resp.Allowed != tt.allowed || resp.Result == nil || resp.Result.Code != tt.code {
				t.Fatalf("got allowed=%v result=%+v, want allowed=%v code %d", resp.Allowed, resp.Result, tt.allowed, tt.code)
			}
			if !strings.Contains(resp.Result.Message, tt.message) {
				t.Errorf("message %q does not contain %q", resp.Result.Message, tt.message)
			}
			if len(resp.Patches) > 0 {
				t.Errorf("unexpected patch %v", resp.Patches)
			}
		})
	}
}

// TestHandleQuota checks that the handler consults the namespace's quota
// with what the pod asks after defaulting, and that a read failure is an
// error review rather than an admission.
func TestHandleQuota(t *testing.T) {
	quota := memoryQuota("gpu", "4000")
	holder := newPod(named("holder"), phase(corev1.PodRunning),
		annotation("hami.io/vgpu-devices-allocated", ";GPU-0,NVIDIA,3000,0:;"))
	tests := []struct {
		name    string
		objects []client.Object
		failing bool
		pod     *corev1.Pod
		patch   []jsonpatch.Operation
		refusal string
		code    int32
	}{
		{
			name:    "fits",
			objects: []client.Object{quota, holder},
			pod:     newPod(limits("nvidia.com/gpumem", "1000")),
			patch:   []jsonpatch.Operation{addCount, setScheduler},
		},
		{
			name:    "over the quota",
			objects: []client.Object{quota, holder},
			pod:     newPod(limits("nvidia.com/gpumem", "1001")),
			refusal: "exceeding resource quota: namespace team-a is over resource quota gpu: limits.nvidia.com/gpumem is 4000 MiB, its pods hold 3000 MiB and this pod asks 1001 MiB more",
			code:    http.StatusForbidden,
		},
		{
			name:    "count added by defaulting is counted: 2 containers x 1 card x 1000",
			objects: []client.Object{quota, holder},
			pod:     newPod(limits("nvidia.com/gpumem", "1000"), container("second", "nvidia.com/gpumem", "1000")),
			refusal: "this pod asks 2000 MiB more",
			code:    http.StatusForbidden,
		},
		{
			name:    "quota read failure",
			objects: []client.Object{quota},
			failing: true,
			pod:     newPod(limits("nvidia.com/gpumem", "1000")),
			refusal: "device quota of namespace team-a cannot be checked",
			code:    http.StatusInternalServerError,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var reader client.Reader = fake.NewClientBuilder().WithObjects(tt.objects...).Build()
			if tt.failing {
				reader = failingReader{}
			}
			h, err := NewHandler(testConfig(t), reader)
			if err != nil {
				t.Fatal(err)
			}
			req := createRequest(t, tt.pod)
			resp := h.Handle(context.Background(), req)
			if tt.refusal != "" {
				assertRefused(t, resp, tt.code, tt.refusal)
				return
			}
			assertPatch(t, req, resp, tt.patch)
		})
	}
}

// TestPatchKeepsUnknownFields checks that a field this build's API types do
// not know (a newer API server) is not removed by the patch.
func TestPatchKeepsUnknownFields(t *testing.T) {
	h, err := NewHandler(testConfig(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	req := createRequest(t, newPod(limits("nvidia.com/gpumem", "1000")))
	var obj map[string]any
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		t.Fatal(err)
	}
	obj["spec"].(map[string]any)["futureField"] = "kept"
	obj["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["futureContainerField"] = "kept"
	if req.Object.Raw, err = json.Marshal(obj); err != nil {
		t.Fatal(err)
	}
	resp := h.Handle(context.Background(), req)
	patched := applyPatch(t, req, resp)
	var out map[string]any
	if err := json.Unmarshal(patched, &out); err != nil {
		t.Fatal(err)
	}
	spec := out["spec"].(map[string]any)
	if spec["futureField"] != "kept" || spec["containers"].([]any)[0].(map[string]any)["futureContainerField"] != "kept" {
		t.Errorf("unknown fields were dropped: %s", patched)
	}
	if spec["schedulerName"] != DefaultSchedulerName {
		t.Errorf("schedulerName = %v", spec["schedulerName"])
	}
}

func assertRefused(t *testing.T, resp admission.Response, code int32, refusal string) {
	t.Helper()
	if resp.Allowed {
		t.Fatalf("allowed, want refused with %q", refusal)
	}
	if resp.Result == nil || resp.Result.Code != code {
		t.Fatalf("result %+v, want code %d", resp.Result, code)
	}
	if !strings.Contains(resp.Result.Message, refusal) {
		t.Errorf("refusal %q does not contain %q", resp.Result.Message, refusal)
	}
	if len(resp.Patches) > 0 {
		t.Errorf("refusal carries a patch: %v", resp.Patches)
	}
}

// assertPatch checks the response allows the pod with exactly the patch
// operations want (in any order) and that they apply to the request's raw
// object and yield a valid pod.
func assertPatch(t *testing.T, req admission.Request, resp admission.Response, want []jsonpatch.Operation) {
	t.Helper()
	if !resp.Allowed {
		t.Fatalf("refused: %+v", resp.Result)
	}
	got := slices.Clone(resp.Patches)
	byPath := func(a, b jsonpatch.Operation) int { return strings.Compare(a.Path, b.Path) }
	slices.SortFunc(got, byPath)
	want = slices.Clone(want)
	slices.SortFunc(want, byPath)
	if len(got) != len(want) || !reflect.DeepEqual(normalise(t, got), normalise(t, want)) {
		t.Fatalf("patch:\n got %s\nwant %s", mustJSON(t, got), mustJSON(t, want))
	}
	if len(want) == 0 {
		if resp.PatchType != nil {
			t.Errorf("patch type %v set without a patch", *resp.PatchType)
		}
		return
	}
	var pod corev1.Pod
	if err := json.Unmarshal(applyPatch(t, req, resp), &pod); err != nil {
		t.Fatalf("patched object is not a pod: %v", err)
	}
}

func applyPatch(t *testing.T, req admission.Request, resp admission.Response) []byte {
	t.Helper()
	if !resp.Allowed || len(resp.Patches) == 0 {
		t.Fatalf("no patch to apply: %+v", resp)
	}
	raw := mustJSON(t, resp.Patches)
	p, err := jsonpatchapply.DecodePatch(raw)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Apply(req.Object.Raw)
	if err != nil {
		t.Fatalf("patch %s does not apply to the request's object: %v", raw, err)
	}
	return out
}

// normalise round-trips operations through JSON so that values compare
// as the API server reads them.
func normalise(t *testing.T, ops []jsonpatch.Operation) any {
	t.Helper()
	var out any
	if err := json.Unmarshal(mustJSON(t, ops), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// failingReader fails every read, as a cache that lost its API server might.
type failingReader struct{}

func (failingReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errUnavailable
}

func (failingReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errUnavailable
}

var errUnavailable = errors.New("the server is currently unable to handle the request")
