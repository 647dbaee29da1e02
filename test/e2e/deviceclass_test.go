package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/plugins/dynamicresources"
	"github.com/hami-scheduler/hami-scheduler/scheduler/profile"
)

// With a DeviceClass that maps nvidia.com/gpu (what NVIDIA's DRA driver
// chart installs by default, deviceclass-gpu.yaml), kube-scheduler's
// DynamicResources would refuse every HAMi pod on every node: the pod's
// other HAMi resources (gpumem, gpucores) are advertised by no node and
// mapped by no class. HAMi's examples still run on the device-plugin
// nodes, each with its HAMi assignment, and nothing is over-committed.
func TestDeviceClassMappingHAMiResource(t *testing.T) {
	e := newEnv(t, "deviceclass")
	e.startWebhook(nil)
	createDeviceClass(e, &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu.nvidia.com"},
		Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
			}}},
			ExtendedResourceName: ptr.To(string(nvidia.DefaultCountName)),
		},
	})
	// make run's nodes, which the examples are written for.
	e.addNodes("2 nodes x 4 cards of NVIDIA A100-SXM4-40GB 40 GiB, split 10; 1 node x 2 cards of Tesla T4 15 GiB, split 4", nil)

	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	// The single pods first, with one asking only for a whole card (the
	// webhook adds gpucores), then the Deployment's replicas, which spread
	// over the cards left: exclusive use needs a card nobody shares yet.
	pods := []*corev1.Pod{e.pod("cards-only", gpu{name: "cuda", cards: 1})}
	var replicas []*corev1.Pod
	for _, f := range files {
		if ps, replicated := examplePods(t, f); replicated {
			replicas = append(replicas, ps...)
		} else {
			pods = append(pods, ps...)
		}
	}
	var names []string
	for _, p := range append(pods, replicas...) {
		p.Namespace = e.ns
		if p.Spec.NodeSelector == nil {
			p.Spec.NodeSelector = map[string]string{}
		}
		p.Spec.NodeSelector[groupLabel] = e.group
		p.Spec.SchedulerName = ""
		if created := e.create(p); created.Spec.SchedulerName != profile.SchedulerName {
			t.Fatalf("example pod %s: schedulerName %q after admission, want %s", p.Name, created.Spec.SchedulerName, profile.SchedulerName)
		}
		names = append(names, p.Name)
	}
	for _, name := range names {
		p := e.waitRunning(name)
		if _, ok := p.Annotations[nvidia.AllocatedAnnotation]; !ok {
			t.Errorf("pod %s runs without %s: %s", name, nvidia.AllocatedAnnotation, describe(p))
		}
	}
	e.checkAccounting()
}

// createDeviceClass creates a cluster-wide DeviceClass for the test and
// deletes it when the test ends.
func createDeviceClass(e *env, class *resourceapi.DeviceClass) {
	e.t.Helper()
	client := controlPlane.Client.ResourceV1().DeviceClasses()
	if _, err := client.Create(e.ctx, class, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create DeviceClass %s: %v", class.Name, err)
	}
	e.t.Cleanup(func() {
		// The test's context is done once cleanups run.
		err := client.Delete(context.Background(), class.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			e.t.Errorf("delete DeviceClass %s: %v", class.Name, err)
		}
	})
}

// examplePods reads the pods of an example file: its Pod, or one pod per
// replica of its Deployment (replicated).
func examplePods(t *testing.T, file string) (pods []*corev1.Pod, replicated bool) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var kind metav1.TypeMeta
	if err := yaml.Unmarshal(data, &kind); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if kind.Kind != "Deployment" {
		return []*corev1.Pod{examplePod(t, file)}, false
	}
	d := &appsv1.Deployment{}
	if err := yaml.UnmarshalStrict(data, d); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for i := range ptr.Deref(d.Spec.Replicas, 1) {
		pods = append(pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", d.Name, i), Labels: d.Spec.Template.Labels, Annotations: d.Spec.Template.Annotations},
			Spec:       *d.Spec.Template.Spec.DeepCopy(),
		})
	}
	return pods, true
}

// A DeviceClass mapping a resource of a HAMi vendor the scheduler does not
// enable (Hygon's, with NVIDIA alone on) gets a Warning event saying so:
// kube-scheduler's DynamicResources, not HAMi, then allocates pods asking
// it.
func TestDeviceClassOfVendorNotEnabled(t *testing.T) {
	e := newEnv(t, "deviceclass-vendor")
	createDeviceClass(e, &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-dcu"},
		Spec:       resourceapi.DeviceClassSpec{ExtendedResourceName: ptr.To("hygon.com/dcunum")},
	})
	e.eventually("a Warning event on DeviceClass "+e.ns+"-dcu", func() (bool, string) {
		list, err := controlPlane.Client.CoreV1().Events("").List(e.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + e.ns + "-dcu"})
		if err != nil {
			return false, err.Error()
		}
		for _, ev := range list.Items {
			if ev.Reason == dynamicresources.ReasonVendorNotEnabled && ev.Type == corev1.EventTypeWarning &&
				strings.Contains(ev.Message, "hygon.com/dcunum") && strings.Contains(ev.Message, "does not enable") {
				return true, ev.Message
			}
		}
		return false, fmt.Sprintf("%d events", len(list.Items))
	})
}
