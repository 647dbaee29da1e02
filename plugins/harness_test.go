package plugins

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	configv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

// fakeHandle is the part of fwk.Handle the plugin uses; anything else
// panics through the nil embedded interface, which a test would notice.
type fakeHandle struct {
	fwk.Handle
	client    clientset.Interface
	informers informers.SharedInformerFactory
	recorder  *eventLog
	// snapshot is what SnapshotSharedLister returns; nil panics.
	snapshot fwk.SharedLister
	// dra is what SharedDRAManager returns (harness_dra_since1.34_test.go); nil:
	// the scheduler runs without DRA.
	dra draManager

	mu        sync.Mutex
	activated []string
	waiting   map[types.UID]*fakeWaitingPod
}

func (h *fakeHandle) ClientSet() clientset.Interface                         { return h.client }
func (h *fakeHandle) SharedInformerFactory() informers.SharedInformerFactory { return h.informers }
func (h *fakeHandle) EventRecorder() events.EventRecorderLogger              { return h.recorder }
func (h *fakeHandle) SnapshotSharedLister() fwk.SharedLister                 { return h.snapshot }

// GetWaitingPod returns the pod waiting at Permit that wait put there.
func (h *fakeHandle) GetWaitingPod(uid types.UID) fwk.WaitingPod {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w, ok := h.waiting[uid]; ok {
		return w
	}
	return nil
}

// wait puts pod among the pods waiting at Permit.
func (h *fakeHandle) wait(pod *corev1.Pod) *fakeWaitingPod {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waiting == nil {
		h.waiting = map[types.UID]*fakeWaitingPod{}
	}
	w := &fakeWaitingPod{pod: pod}
	h.waiting[pod.UID] = w
	return w
}

// fakeWaitingPod records a rejection.
type fakeWaitingPod struct {
	fwk.WaitingPod
	pod *corev1.Pod

	mu       sync.Mutex
	rejected string
}

func (w *fakeWaitingPod) GetPod() *corev1.Pod { return w.pod }

func (w *fakeWaitingPod) Reject(_, msg string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rejected = msg
	return true
}

func (w *fakeWaitingPod) rejection() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rejected
}

// Activate records the pods the plugin sends back to the active queue.
func (h *fakeHandle) Activate(_ klog.Logger, pods map[string]*corev1.Pod) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for key := range pods {
		h.activated = append(h.activated, key)
	}
}

func (h *fakeHandle) activations() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.activated...)
}

// recordedEvent is one event the plugin recorded.
type recordedEvent struct {
	object, eventType, reason, action, note string
}

// eventLog records events without bound (events.FakeRecorder blocks once
// its channel is full).
type eventLog struct {
	mu     sync.Mutex
	events []recordedEvent
}

func (l *eventLog) Eventf(regarding, _ runtime.Object, eventType, reason, action, note string, args ...any) {
	name := ""
	if o, ok := regarding.(metav1.Object); ok {
		name = o.GetNamespace() + "/" + o.GetName()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, recordedEvent{object: name, eventType: eventType, reason: reason, action: action, note: fmt.Sprintf(note, args...)})
}

func (l *eventLog) WithLogger(klog.Logger) events.EventRecorderLogger { return l }

// take returns the events recorded so far and forgets them.
func (l *eventLog) take() []recordedEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.events
	l.events = nil
	return out
}

// harness is a plugin over a fake API server holding objs.
type harness struct {
	t      testing.TB
	ctx    context.Context
	client *fake.Clientset
	handle *fakeHandle
	plugin *Plugin
}

func newHarness(t testing.TB, args *configv1.HAMiArgs, objs ...runtime.Object) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	client := fake.NewClientset(objs...)
	h := &harness{t: t, ctx: ctx, client: client, handle: &fakeHandle{
		client:    client,
		informers: informers.NewSharedInformerFactory(client, 0),
		recorder:  &eventLog{},
	}}
	pl, err := New(ctx, rawArgs(t, args), h.handle)
	if err != nil {
		cancel()
		t.Fatalf("New: %v", err)
	}
	h.plugin = pl.(*Plugin)
	h.handle.informers.Start(ctx.Done())
	h.handle.informers.WaitForCacheSync(ctx.Done())
	deadline := time.Now().Add(10 * time.Second)
	for !h.plugin.synced() {
		if time.Now().After(deadline) {
			t.Fatal("device cache never synced")
		}
		time.Sleep(time.Millisecond)
	}
	t.Cleanup(func() {
		cancel()
		h.handle.informers.Shutdown()
	})
	return h
}

// cardSpec describes one card of a test node.
type cardSpec struct {
	id      string
	memMiB  int
	cores   int
	split   int
	numa    int
	healthy bool
}

func card(id string, memMiB int) cardSpec {
	return cardSpec{id: id, memMiB: memMiB, cores: 100, split: 10, healthy: true}
}

// gpuNode registers cards as HAMi's device plugin would.
func gpuNode(name string, cards ...cardSpec) *corev1.Node {
	var entries []string
	for i, c := range cards {
		entries = append(entries, fmt.Sprintf(`{"id":%q,"index":%d,"count":%d,"devmem":%d,"devcore":%d,"type":"NVIDIA-A100","numa":%d,"health":%t}`,
			c.id, i, c.split, c.memMiB, c.cores, c.numa, c.healthy))
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			nvidia.RegisterAnnotation: "[" + strings.Join(entries, ",") + "]",
		}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			"nvidia.com/gpu": *resource.NewQuantity(int64(10*len(cards)), resource.DecimalSI),
		}},
	}
}

// eightCardNode is a node with 8 cards of 40 GiB.
func eightCardNode(name string) *corev1.Node {
	var cards []cardSpec
	for i := 0; i < 8; i++ {
		cards = append(cards, card(fmt.Sprintf("%s-gpu%d", name, i), 40960))
	}
	return gpuNode(name, cards...)
}

// gpu is a container's NVIDIA limits.
func gpu(count, memMiB, cores int64) corev1.ResourceList {
	l := corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(count, resource.DecimalSI)}
	if memMiB > 0 {
		l["nvidia.com/gpumem"] = *resource.NewQuantity(memMiB, resource.DecimalSI)
	}
	if cores > 0 {
		l["nvidia.com/gpucores"] = *resource.NewQuantity(cores, resource.DecimalSI)
	}
	return l
}

// gpuPod has one container per limits entry; a nil entry asks for nothing.
func gpuPod(name string, limits ...corev1.ResourceList) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Annotations: map[string]string{}}}
	for i, l := range limits {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: fmt.Sprintf("c%d", i), Resources: corev1.ResourceRequirements{Limits: l}})
	}
	return p
}

func (h *harness) nodeInfo(name string) fwk.NodeInfo {
	h.t.Helper()
	node, err := h.client.CoreV1().Nodes().Get(h.ctx, name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	ni := framework.NewNodeInfo()
	ni.SetNode(node)
	return ni
}

// preFilter runs PreFilter on a fresh cycle state.
func (h *harness) preFilter(pod *corev1.Pod, nodes ...fwk.NodeInfo) (fwk.CycleState, *fwk.Status) {
	state := framework.NewCycleState()
	_, st := h.plugin.PreFilter(h.ctx, state, pod, nodes)
	return state, st
}

// schedule runs PreFilter, Filter and Reserve of pod on node, failing the
// test on any error.
func (h *harness) schedule(pod *corev1.Pod, node string) fwk.CycleState {
	h.t.Helper()
	ni := h.nodeInfo(node)
	state, st := h.preFilter(pod, ni)
	if !st.IsSuccess() {
		h.t.Fatalf("PreFilter %s: %v", pod.Name, st)
	}
	if st := h.plugin.Filter(h.ctx, state, pod, ni); !st.IsSuccess() {
		h.t.Fatalf("Filter %s on %s: %v", pod.Name, node, st)
	}
	if st := h.plugin.Reserve(h.ctx, state, pod, node); !st.IsSuccess() {
		h.t.Fatalf("Reserve %s on %s: %v", pod.Name, node, st)
	}
	return state
}

// scores runs Filter and Score of pod on each node, failing the test on
// any error.
func (h *harness) scores(state fwk.CycleState, pod *corev1.Pod, nodes ...fwk.NodeInfo) fwk.NodeScoreList {
	h.t.Helper()
	var out fwk.NodeScoreList
	for _, ni := range nodes {
		if st := h.plugin.Filter(h.ctx, state, pod, ni); !st.IsSuccess() {
			h.t.Fatalf("Filter %s on %s: %v", pod.Name, ni.Node().Name, st)
		}
		s, st := h.plugin.Score(h.ctx, state, pod, ni)
		if !st.IsSuccess() {
			h.t.Fatalf("Score %s on %s: %v", pod.Name, ni.Node().Name, st)
		}
		out = append(out, fwk.NodeScore{Name: ni.Node().Name, Score: s})
	}
	return out
}

// filter runs PreFilter and Filter of pod on node.
func (h *harness) filter(pod *corev1.Pod, node string) (fwk.CycleState, *fwk.Status) {
	h.t.Helper()
	ni := h.nodeInfo(node)
	state, st := h.preFilter(pod, ni)
	if !st.IsSuccess() {
		return state, st
	}
	return state, h.plugin.Filter(h.ctx, state, pod, ni)
}

// explained is Filter's status message followed by the node's own detail
// that Filter recorded for HAMi's FilteringFailed event.
func explained(state fwk.CycleState, node string, st *fwk.Status) string {
	s, err := readState(state)
	if err != nil || s == nil {
		return st.Message()
	}
	if r, ok := s.rejections.snapshot()[node]; ok && r.detail != "" {
		return st.Message() + " (" + r.detail + ")"
	}
	return st.Message()
}
