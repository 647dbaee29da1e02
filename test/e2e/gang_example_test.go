package e2e

import (
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hami-scheduler/hami-scheduler/hack/manifestgen"
)

// examples/gangs/podgroup.yaml, as a user applies it: the gang's three
// workers run together.
func TestGangExample(t *testing.T) {
	e := newEnv(t, "gang-example")
	e.addNodes("2 nodes x 2 cards of NVIDIA A100 40 GiB, split 10", nil)
	data, err := os.ReadFile("../../examples/gangs/podgroup.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifestgen.Decode(manifestgen.Documents(map[string]string{"podgroup.yaml": string(data)}))
	if err != nil {
		t.Fatal(err)
	}
	var pods []string
	for _, o := range objs {
		o.SetNamespace(e.ns)
		switch o.GetKind() {
		case "PodGroup":
			if _, err := e.podGroups().Create(e.ctx, o, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		case "Pod":
			var p corev1.Pod
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &p); err != nil {
				t.Fatal(err)
			}
			// The webhook sets the scheduler in a cluster; here the test's
			// nodes are pinned as every e2e pod's are.
			routed := e.pod(p.Name)
			p.Spec.SchedulerName, p.Spec.NodeSelector = routed.Spec.SchedulerName, routed.Spec.NodeSelector
			e.create(&p)
			pods = append(pods, p.Name)
		default:
			t.Fatalf("unexpected %s in the example", o.GetKind())
		}
	}
	if len(pods) != 3 {
		t.Fatalf("the example has %d pods, want 3", len(pods))
	}
	e.waitAllRunning(pods)
	e.checkAccounting()
}
