package dra

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hami-scheduler/hami-scheduler/hack/manifestgen"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

// examplesDir holds the DRA examples that ship.
const examplesDir = "../../examples/dra"

// example decodes a shipped example's objects.
func example(t *testing.T, file string) []runtime.Object {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(examplesDir, file))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := manifestgen.Decode(manifestgen.Documents(map[string]string{file: string(data)}))
	if err != nil {
		t.Fatal(err)
	}
	var out []runtime.Object
	for _, d := range docs {
		var obj runtime.Object
		switch d.GetKind() {
		case "Pod":
			obj = &corev1.Pod{}
		case "ResourceClaim":
			obj = &resourceapi.ResourceClaim{}
		case "ResourceClaimTemplate":
			obj = &resourceapi.ResourceClaimTemplate{}
		case "DeviceClass":
			obj = &resourceapi.DeviceClass{}
		default:
			t.Fatalf("%s: unexpected %s", file, d.GetKind())
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(d.Object, obj); err != nil {
			t.Fatal(err)
		}
		out = append(out, obj)
	}
	return out
}

// apply creates a shipped example's namespaced objects in the test's
// namespace, as kubectl apply -n does.
func (c *cluster) apply(file string) {
	c.t.Helper()
	for _, obj := range example(c.t, file) {
		var err error
		switch o := obj.(type) {
		case *corev1.Pod:
			o.Namespace = c.ns
			_, err = controlPlane.Client.CoreV1().Pods(c.ns).Create(c.ctx, o, metav1.CreateOptions{})
		case *resourceapi.ResourceClaim:
			o.Namespace = c.ns
			_, err = controlPlane.Client.ResourceV1().ResourceClaims(c.ns).Create(c.ctx, o, metav1.CreateOptions{})
		case *resourceapi.ResourceClaimTemplate:
			o.Namespace = c.ns
			_, err = controlPlane.Client.ResourceV1().ResourceClaimTemplates(c.ns).Create(c.ctx, o, metav1.CreateOptions{})
		default:
			c.t.Fatalf("%s: %T is not namespaced", file, obj)
		}
		if err != nil {
			c.t.Fatalf("%s: %v", file, err)
		}
	}
}

// examples/dra as a user applies it: the native claims run on a DRA node
// with the capacity they ask (the template's claim made by the resource
// claim controller); the DeviceClass is the one hami-local creates for
// "dra nvidia" groups.
func TestDRAExamples(t *testing.T) {
	c := newCluster(t, "dra-examples", "1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB, dra", nil)
	tests := []struct {
		file, pod          string
		wantMiB, wantCores int64
	}{
		{file: "native-claim.yaml", pod: "native-claim", wantMiB: 10240, wantCores: 100},
		{file: "native-claim-template.yaml", pod: "native-claim-template", wantMiB: 4096, wantCores: 25},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			c.apply(tt.file)
			pod := c.waitRunning(tt.pod)
			name, err := claimName(pod)
			if err != nil {
				t.Fatal(err)
			}
			c.checkReserved(name, pod)
			got, ok := agent.PreparedDevices(c.ns, tt.pod)
			if !ok || len(got["cuda"]) != 1 || got["cuda"][0].MemoryMiB != tt.wantMiB || got["cuda"][0].Cores != tt.wantCores {
				t.Errorf("container cuda got %+v, %v: want %d MiB and %d%%", got, ok, tt.wantMiB, tt.wantCores)
			}
		})
	}
	t.Run("deviceclass-nvidia.yaml", func(t *testing.T) {
		objs := example(t, "deviceclass-nvidia.yaml")
		s, err := simnode.ParseSpec("1 node x 1 card of NVIDIA A100-SXM4-40GB 40 GiB, dra nvidia")
		if err != nil {
			t.Fatal(err)
		}
		want := simnode.DeviceClasses([]simnode.Spec{s})
		if len(objs) != 1 || len(want) != 1 || !apiequality.Semantic.DeepEqual(objs[0].(*resourceapi.DeviceClass).Spec, want[0].Spec) {
			t.Errorf("examples/dra/deviceclass-nvidia.yaml %+v differs from the local cluster's %+v", objs, want)
		}
	})
}

// claimName is the claim of the pod's first resourceClaims entry, made
// from its template when it names one.
func claimName(pod *corev1.Pod) (string, error) {
	pc := pod.Spec.ResourceClaims[0]
	if pc.ResourceClaimName != nil {
		return *pc.ResourceClaimName, nil
	}
	for _, s := range pod.Status.ResourceClaimStatuses {
		if s.Name == pc.Name && s.ResourceClaimName != nil {
			return *s.ResourceClaimName, nil
		}
	}
	return "", fmt.Errorf("pod %s: no claim made for %s yet", pod.Name, pc.Name)
}
