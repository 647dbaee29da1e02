package workload

import (
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hami-scheduler/hami-scheduler/hack/manifestgen"
)

// examples/gangs/in-tree.yaml, as a user applies it: the gang's three
// workers run together.
func TestInTreeGangExample(t *testing.T) {
	c := newCluster(t, "in-tree-example", "2 nodes x 2 cards of NVIDIA A100 40 GiB")
	data, err := os.ReadFile("../../examples/gangs/in-tree.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifestgen.Decode(manifestgen.Documents(map[string]string{"in-tree.yaml": string(data)}))
	if err != nil {
		t.Fatal(err)
	}
	var pods []string
	for _, o := range objs {
		switch o.GetKind() {
		case "PodGroup":
			var pg schedulingv1beta1.PodGroup
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &pg); err != nil {
				t.Fatal(err)
			}
			if _, err := controlPlane.Client.SchedulingV1beta1().PodGroups(c.ns).Create(c.ctx, &pg, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		case "Pod":
			var p corev1.Pod
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &p); err != nil {
				t.Fatal(err)
			}
			// Pinned to the test's nodes, as every pod of these tests.
			p.Spec.NodeSelector = map[string]string{nodeLabel: c.ns}
			if _, err := controlPlane.Client.CoreV1().Pods(c.ns).Create(c.ctx, &p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			pods = append(pods, p.Name)
		default:
			t.Fatalf("unexpected %s in the example", o.GetKind())
		}
	}
	if len(pods) != 3 {
		t.Fatalf("the example has %d pods, want 3", len(pods))
	}
	c.waitRunning(pods...)
	c.checkAccounting()
}
