package plugins

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	fwk "k8s.io/kube-scheduler/framework"

	configv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/cambricon"
	"github.com/hami-scheduler/hami-scheduler/plugins/nodelock"
)

// cambriconConfig is a HAMi device-config.yaml enabling NVIDIA and
// Cambricon (the chart's names).
const cambriconConfig = `nvidia:
  resourceCountName: nvidia.com/gpu
  resourceMemoryName: nvidia.com/gpumem
  resourceCoreName: nvidia.com/gpucores
  defaultGPUNum: 1
cambricon:
  resourceCountName: cambricon.com/vmlu
  resourceMemoryName: cambricon.com/mlu.smlu.vmemory
  resourceCoreName: cambricon.com/mlu.smlu.vcore
`

// cambriconArgs are plugin args reading cambriconConfig.
func cambriconArgs(t *testing.T) *configv1.HAMiArgs {
	t.Helper()
	path := filepath.Join(t.TempDir(), "device-config.yaml")
	if err := os.WriteFile(path, []byte(cambriconConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return &configv1.HAMiArgs{DeviceConfigFile: &path}
}

// withMLUs gives a node Cambricon's capacities: 4 MLUs of 24576 MiB.
func withMLUs(node *corev1.Node) *corev1.Node {
	if node.Status.Capacity == nil {
		node.Status.Capacity = corev1.ResourceList{}
	}
	node.Status.Capacity[cambricon.DefaultCoresName] = resource.MustParse("400")
	node.Status.Capacity[cambricon.DefaultMemoryName] = resource.MustParse("384")
	return node
}

func mlu(count int64) corev1.ResourceList {
	return corev1.ResourceList{
		cambricon.DefaultCountName:  *resource.NewQuantity(count, resource.DecimalSI),
		cambricon.DefaultMemoryName: resource.MustParse("20"),
		cambricon.DefaultCoresName:  resource.MustParse("10"),
	}
}

// TestPreBindTakesCambriconLock: PreBind of a pod asking for MLUs takes
// cambricon.com/dsmlu.lock the HAMi way (free, older than 2 minutes or,
// unlike HAMi, unreadable: set to now; younger: the bind fails and nothing
// is written), besides hami.io/mutex.lock when NVIDIA is asked too.
func TestPreBindTakesCambriconLock(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name       string
		lock       string // "": none
		noMap      bool   // the node has no annotations at all
		pod        *corev1.Pod
		wantErr    string
		wantVendor bool // cambricon.com/dsmlu.lock set by this PreBind
		wantShared bool // hami.io/mutex.lock taken
	}{
		{name: "free node", pod: gpuPod("p", mlu(1)), wantVendor: true},
		{name: "node without annotations", noMap: true, pod: gpuPod("p", mlu(1)), wantVendor: true},
		{name: "expired lock is replaced", lock: now.Add(-3 * time.Minute).Format(time.RFC3339), pod: gpuPod("p", mlu(1)), wantVendor: true},
		{name: "lock within 2 minutes", lock: now.Add(-30 * time.Second).Format(time.RFC3339), pod: gpuPod("p", mlu(1)),
			wantErr: "node lock held: taken at"},
		{name: "unreadable lock is replaced", lock: "yesterday", pod: gpuPod("p", mlu(1)), wantVendor: true},
		{name: "NVIDIA and Cambricon take both", pod: gpuPod("p", merge(gpu(1, 1000, 0), mlu(1))), wantVendor: true, wantShared: true},
		{name: "NVIDIA alone takes the shared lock only", pod: gpuPod("p", gpu(1, 1000, 0)), wantShared: true},
		{name: "busy vendor lock takes no shared lock", lock: now.Format(time.RFC3339), pod: gpuPod("p", merge(gpu(1, 1000, 0), mlu(1))),
			wantErr: "node lock held"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := withMLUs(eightCardNode("n1"))
			if tt.lock != "" {
				node.Annotations[cambricon.LockAnnotation] = tt.lock
			}
			if tt.noMap {
				node.Annotations = nil
			}
			h := newHarness(t, cambriconArgs(t), node, tt.pod)
			state := h.schedule(tt.pod, "n1")
			before := time.Now().Add(-time.Second)
			st := h.plugin.PreBind(h.ctx, state, tt.pod, "n1")
			got, _ := h.client.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
			pod, _ := h.client.CoreV1().Pods("default").Get(h.ctx, "p", metav1.GetOptions{})
			if tt.wantErr != "" {
				if st.IsSuccess() || !strings.Contains(st.Message(), tt.wantErr) || !strings.Contains(st.Message(), cambricon.LockAnnotation) {
					t.Fatalf("PreBind = %v, want an error naming %s and containing %q", st, cambricon.LockAnnotation, tt.wantErr)
				}
				if v := got.Annotations[cambricon.LockAnnotation]; v != tt.lock {
					t.Errorf("lock = %q, want it left at %q", v, tt.lock)
				}
				if _, ok := got.Annotations[devices.NodeLock]; ok {
					t.Error("hami.io/mutex.lock taken by a failed PreBind")
				}
				// The assignment is written before the locks and, the
				// hand-over not begun, marked failed on the unbound pod.
				h.plugin.Unreserve(h.ctx, state, tt.pod, "n1")
				pod, _ = h.client.CoreV1().Pods("default").Get(h.ctx, "p", metav1.GetOptions{})
				if phase := pod.Annotations[devices.BindPhase]; phase != devices.BindPhaseFailed || pod.Spec.NodeName != "" {
					t.Errorf("bind phase %q, node %q after a failed PreBind and Unreserve; want the assignment marked failed, unbound", phase, pod.Spec.NodeName)
				}
				return
			}
			if !st.IsSuccess() {
				t.Fatalf("PreBind: %v", st)
			}
			v, held := got.Annotations[cambricon.LockAnnotation]
			if held != tt.wantVendor {
				t.Fatalf("%s held = %v (%q), want %v", cambricon.LockAnnotation, held, v, tt.wantVendor)
			}
			if held {
				at, err := time.Parse(time.RFC3339, v)
				if err != nil || at.Before(before.Truncate(time.Second)) {
					t.Errorf("lock = %q, want the RFC3339 time of this PreBind", v)
				}
			}
			if _, shared := got.Annotations[devices.NodeLock]; shared != tt.wantShared {
				t.Errorf("hami.io/mutex.lock held = %v, want %v", shared, tt.wantShared)
			}
			if pod.Annotations[devices.BindPhase] != devices.BindPhaseAllocating {
				t.Errorf("pod bind-phase = %q, want it handed over", pod.Annotations[devices.BindPhase])
			}
		})
	}
}

// TestCambriconInitContainerRefused: an MLU asked by an init container is
// never a candidate of Cambricon's plugin, so PreFilter keeps the pod
// Pending with the plugin's reason, and no lock is taken.
func TestCambriconInitContainerRefused(t *testing.T) {
	pod := gpuPod("p", nil)
	pod.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Limits: mlu(1)}}}
	h := newHarness(t, cambriconArgs(t), withMLUs(eightCardNode("n1")), pod)
	_, st := h.preFilter(pod, h.nodeInfo("n1"))
	if st.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(st.Message(), "regular containers only") || !strings.Contains(st.Message(), cambricon.PluginVersion) {
		t.Fatalf("PreFilter = %v, want UnschedulableAndUnresolvable naming the plugin", st)
	}
	got, _ := h.client.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
	if v, held := got.Annotations[cambricon.LockAnnotation]; held {
		t.Errorf("refused MLU pod took %s = %q", cambricon.LockAnnotation, v)
	}
}

// TestCambriconLockReleasedOnFailure: when the pod patch or the binding
// fails, Unreserve deletes the Cambricon lock the pod took, as HAMi deletes
// it when its bind fails; a lock no longer the pod's is left alone.
func TestCambriconLockReleasedOnFailure(t *testing.T) {
	tests := []struct {
		name string
		// failPatch fails PreBind's pod patch; else PreBind succeeds and
		// the binding fails.
		failPatch bool
		// retake replaces the lock before Unreserve (its device plugin
		// released it, another pod took it).
		retake   string
		wantLock string // "": none
	}{
		{name: "pod patch fails: written first, no lock taken", failPatch: true},
		{name: "binding fails"},
		{name: "lock taken by another pod since", retake: "2030-01-01T00:00:00Z", wantLock: "2030-01-01T00:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := gpuPod("p", merge(gpu(1, 1000, 0), mlu(1)))
			h := newHarness(t, cambriconArgs(t), withMLUs(eightCardNode("n1")), pod)
			state := h.schedule(pod, "n1")
			if tt.failPatch {
				h.client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, errors.New("apiserver unavailable")
				})
				if st := h.plugin.PreBind(h.ctx, state, pod, "n1"); st.IsSuccess() {
					t.Fatal("PreBind succeeded despite the failing pod patch")
				}
				// The assignment is written first: no lock was taken.
				node, _ := h.client.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
				if v, held := node.Annotations[cambricon.LockAnnotation]; held {
					t.Errorf("%s = %q taken although the pod patch failed first", cambricon.LockAnnotation, v)
				}
				return
			} else if st := h.plugin.PreBind(h.ctx, state, pod, "n1"); !st.IsSuccess() {
				t.Fatalf("PreBind: %v", st)
			}
			// Taken by PreBind, even a failed one, until Unreserve.
			node, _ := h.client.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
			if _, held := node.Annotations[cambricon.LockAnnotation]; !held {
				t.Fatalf("PreBind took no %s", cambricon.LockAnnotation)
			}
			if tt.retake != "" {
				node, _ := h.client.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
				node.Annotations[cambricon.LockAnnotation] = tt.retake
				if _, err := h.client.CoreV1().Nodes().Update(h.ctx, node, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			h.plugin.Unreserve(h.ctx, state, pod, "n1")
			node, _ = h.client.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
			if got := node.Annotations[cambricon.LockAnnotation]; got != tt.wantLock {
				t.Errorf("%s = %q after Unreserve, want %q", cambricon.LockAnnotation, got, tt.wantLock)
			}
			if lock, held := node.Annotations[devices.NodeLock]; held {
				t.Errorf("hami.io/mutex.lock %q left after Unreserve", lock)
			}
		})
	}
}

// TestStaleLocksReleased: a lock naming a pod that is bound to another
// node, or deleted, is released; one naming a pod that may still hand
// over on the node (unbound, or bound there) is kept.
func TestStaleLocksReleased(t *testing.T) {
	taken := time.Now()
	lockedBy := func(node string, pod *corev1.Pod) *corev1.Node {
		n := eightCardNode(node)
		n.Annotations[devices.NodeLock] = nodelock.Value(taken, pod)
		return n
	}
	boundTo := func(name, node string) *corev1.Pod {
		p := gpuPod(name, gpu(1, 1000, 0))
		p.Spec.NodeName = node
		return p
	}
	tests := []struct {
		name     string
		pod      *corev1.Pod
		node     string
		then     func(h *harness, pod *corev1.Pod)
		released bool
	}{
		{name: "bound elsewhere before the scheduler saw the lock", pod: boundTo("elsewhere", "n2"), node: "n1", released: true},
		{name: "bound here", pod: boundTo("here", "n1"), node: "n1", released: false},
		{name: "unbound", pod: gpuPod("waiting", gpu(1, 1000, 0)), node: "n1", released: false},
		{name: "bound elsewhere later", pod: gpuPod("later", gpu(1, 1000, 0)), node: "n1", released: true,
			then: func(h *harness, pod *corev1.Pod) {
				bound := pod.DeepCopy()
				bound.Spec.NodeName = "n2"
				if _, err := h.client.CoreV1().Pods(pod.Namespace).Update(h.ctx, bound, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "deleted", pod: gpuPod("deleted", gpu(1, 1000, 0)), node: "n1", released: true,
			then: func(h *harness, pod *corev1.Pod) {
				if err := h.client.CoreV1().Pods(pod.Namespace).Delete(h.ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []runtime.Object{lockedBy(tt.node, tt.pod), eightCardNode("n2"), tt.pod}
			h := newHarness(t, nil, objs...)
			if tt.then != nil {
				tt.then(h, tt.pod)
			}
			lockGone := func() bool {
				n, err := h.client.CoreV1().Nodes().Get(h.ctx, tt.node, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				_, held := n.Annotations[devices.NodeLock]
				return !held
			}
			if tt.released {
				h.eventually("the stale lock released", lockGone)
				return
			}
			// The plugin's handlers have seen the node and the pod (the
			// harness waits for them) and decide at once whether to
			// release; a release they started would be under way: wait
			// for it, then the lock must still be there.
			h.plugin.lockHolders.Wait()
			if lockGone() {
				t.Error("a lock whose pod may still hand over on the node was released")
			}
		})
	}
}
