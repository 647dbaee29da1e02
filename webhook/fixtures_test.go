package webhook

import (
	"encoding/json"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/vendors"
)

// Test fixtures: pods are built with functional options so that each table
// row states only what matters to it.

const testNamespace = "team-a"

func TestMain(m *testing.M) {
	ctrllog.SetLogger(klog.NewKlogr())
	m.Run()
}

func testRegistry(t testing.TB, configs ...devices.Config) *devices.Registry {
	t.Helper()
	r, err := vendors.NewRegistry(configs)
	if err != nil {
		t.Fatalf("registry: %v", err)
	}
	return r
}

func testConfig(t testing.TB) Config {
	return Config{SchedulerName: DefaultSchedulerName, TakeOverDefaultScheduler: true, Registry: testRegistry(t)}
}

type podOption func(*corev1.Pod)

// newPod returns a pod as the API server hands it to admission: defaulted
// to default-scheduler, one container "main" asking for nothing.
func newPod(opts ...podOption) *corev1.Pod {
	p := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: testNamespace},
		Spec: corev1.PodSpec{
			SchedulerName: corev1.DefaultSchedulerName,
			Containers:    []corev1.Container{{Name: "main", Image: "cuda"}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// limits sets the last container's limits, e.g. limits("nvidia.com/gpu", "2").
func limits(kv ...string) podOption {
	return func(p *corev1.Pod) {
		c := &p.Spec.Containers[len(p.Spec.Containers)-1]
		setLimits(c, kv...)
	}
}

func setLimits(c *corev1.Container, kv ...string) {
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		c.Resources.Limits[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
}

func container(name string, kv ...string) podOption {
	return func(p *corev1.Pod) {
		c := corev1.Container{Name: name, Image: "busybox"}
		setLimits(&c, kv...)
		p.Spec.Containers = append(p.Spec.Containers, c)
	}
}

func initContainer(name string, kv ...string) podOption {
	return func(p *corev1.Pod) {
		c := corev1.Container{Name: name, Image: "busybox"}
		setLimits(&c, kv...)
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	}
}

func schedulerName(n string) podOption { return func(p *corev1.Pod) { p.Spec.SchedulerName = n } }
func nodeName(n string) podOption      { return func(p *corev1.Pod) { p.Spec.NodeName = n } }
func named(n string) podOption         { return func(p *corev1.Pod) { p.Name = n } }
func inNamespace(ns string) podOption  { return func(p *corev1.Pod) { p.Namespace = ns } }
func phase(ph corev1.PodPhase) podOption {
	return func(p *corev1.Pod) { p.Status.Phase = ph }
}
func priorityClass(n string) podOption {
	return func(p *corev1.Pod) { p.Spec.PriorityClassName = n }
}

func label(k, v string) podOption {
	return func(p *corev1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
	}
}

func annotation(k, v string) podOption {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

// privilegedLast makes the last container privileged.
func privilegedLast() podOption {
	return func(p *corev1.Pod) {
		yes := true
		p.Spec.Containers[len(p.Spec.Containers)-1].SecurityContext = &corev1.SecurityContext{Privileged: &yes}
	}
}

// privilegedInit makes the last init container privileged.
func privilegedInit() podOption {
	return func(p *corev1.Pod) {
		yes := true
		p.Spec.InitContainers[len(p.Spec.InitContainers)-1].SecurityContext = &corev1.SecurityContext{Privileged: &yes}
	}
}

func runtimeClass(n string) podOption { return func(p *corev1.Pod) { p.Spec.RuntimeClassName = &n } }

func noContainers() podOption { return func(p *corev1.Pod) { p.Spec.Containers = nil } }

// createRequest wraps obj in a CREATE admission request for pods.
func createRequest(t *testing.T, obj runtime.Object) admission.Request {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:       "req-1",
		Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Namespace: testNamespace,
		Operation: admissionv1.Create,
		Object:    runtime.RawExtension{Raw: raw},
	}}
}

func quantity(s string) resource.Quantity { return resource.MustParse(s) }
