package coscheduling

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/hami-scheduler/hami-scheduler/apis/config"
	"github.com/hami-scheduler/hami-scheduler/apis/scheduling/v1alpha1"
	"github.com/hami-scheduler/hami-scheduler/plugins"
)

// fakeHandle is the part of fwk.Handle the plugins use; anything else
// panics through the nil embedded interface.
type fakeHandle struct {
	fwk.Handle
	client    clientset.Interface
	informers informers.SharedInformerFactory
	recorder  *eventLog
	nodes     []*corev1.Node
	// placed are the pods the snapshot lists on their node: the bound
	// pods the harness starts with and those assume adds.
	placed []*corev1.Pod

	mu        sync.Mutex
	waiting   map[types.UID]*fakeWaitingPod
	activated []string
}

func (h *fakeHandle) ClientSet() clientset.Interface                         { return h.client }
func (h *fakeHandle) SharedInformerFactory() informers.SharedInformerFactory { return h.informers }
func (h *fakeHandle) EventRecorder() events.EventRecorderLogger              { return h.recorder }

func (h *fakeHandle) Activate(_ klog.Logger, pods map[string]*corev1.Pod) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for key := range pods {
		h.activated = append(h.activated, key)
	}
}

func (h *fakeHandle) IterateOverWaitingPods(fn func(fwk.WaitingPod)) {
	h.mu.Lock()
	waiting := make([]*fakeWaitingPod, 0, len(h.waiting))
	for _, w := range h.waiting {
		waiting = append(waiting, w)
	}
	h.mu.Unlock()
	for _, w := range waiting {
		fn(w)
	}
}

// wait puts pod among the pods waiting at Permit, as the framework does
// when Permit returns Wait.
func (h *fakeHandle) wait(pod *corev1.Pod) *fakeWaitingPod {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waiting == nil {
		h.waiting = map[types.UID]*fakeWaitingPod{}
	}
	w := &fakeWaitingPod{pod: pod, handle: h}
	h.waiting[pod.UID] = w
	return w
}

func (h *fakeHandle) SnapshotSharedLister() fwk.SharedLister {
	h.mu.Lock()
	defer h.mu.Unlock()
	infos := make([]fwk.NodeInfo, 0, len(h.nodes))
	for _, n := range h.nodes {
		ni := framework.NewNodeInfo()
		ni.SetNode(n)
		for _, p := range h.placed {
			if p.Spec.NodeName == n.Name {
				ni.AddPod(p)
			}
		}
		infos = append(infos, ni)
	}
	return fakeLister{infos: infos}
}

// assume lists pod on node in the snapshot, as the scheduler's cache holds
// a pod from Reserve on (waiting at Permit, binding).
func (h *fakeHandle) assume(pod *corev1.Pod, node string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	pod = pod.DeepCopy()
	pod.Spec.NodeName = node
	h.placed = append(h.placed, pod)
}

type fakeLister struct {
	fwk.SharedLister
	infos []fwk.NodeInfo
}

func (l fakeLister) NodeInfos() fwk.NodeInfoLister { return fakeNodeInfos{infos: l.infos} }

// fakeNodeInfos lists and gets nodes; anything else panics through the
// nil embedded interface.
type fakeNodeInfos struct {
	fwk.NodeInfoLister
	infos []fwk.NodeInfo
}

func (l fakeNodeInfos) List() ([]fwk.NodeInfo, error) { return l.infos, nil }

func (l fakeNodeInfos) Get(name string) (fwk.NodeInfo, error) {
	for _, ni := range l.infos {
		if ni.Node().Name == name {
			return ni, nil
		}
	}
	return nil, fmt.Errorf("node %s not found", name)
}

// fakeWaitingPod records what the plugin decides for a waiting pod; once
// decided, it leaves the waiting pods.
type fakeWaitingPod struct {
	pod      *corev1.Pod
	handle   *fakeHandle
	allowed  bool
	rejected string
}

func (w *fakeWaitingPod) GetPod() *corev1.Pod         { return w.pod }
func (w *fakeWaitingPod) GetPendingPlugins() []string { return []string{Name} }
func (w *fakeWaitingPod) Allow(string)                { w.allowed = true; w.leave() }
func (w *fakeWaitingPod) Preempt(string, string) bool { return false }

func (w *fakeWaitingPod) Reject(_ string, msg string) bool {
	w.rejected = msg
	w.leave()
	return true
}

func (w *fakeWaitingPod) leave() {
	w.handle.mu.Lock()
	defer w.handle.mu.Unlock()
	delete(w.handle.waiting, w.pod.UID)
}

// recordedEvent is one event recorded on an object.
type recordedEvent struct{ object, eventType, reason, note string }

// eventLog records events without bound.
type eventLog struct {
	mu     sync.Mutex
	events []recordedEvent
}

func (l *eventLog) Eventf(regarding, _ runtime.Object, eventType, reason, _, note string, args ...any) {
	name := ""
	if o, ok := regarding.(metav1.Object); ok {
		name = o.GetNamespace() + "/" + o.GetName()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, recordedEvent{object: name, eventType: eventType, reason: reason, note: fmt.Sprintf(note, args...)})
}

func (l *eventLog) WithLogger(klog.Logger) events.EventRecorderLogger { return l }

func (l *eventLog) reasons() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.events {
		out = append(out, e.reason)
	}
	return out
}

func (l *eventLog) take() []recordedEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.events
	l.events = nil
	return out
}

// harness is the Coscheduling plugin, and the HAMi plugin of the same
// profile, over fake API servers holding objs (core objects) and groups.
type harness struct {
	t       *testing.T
	ctx     context.Context
	handle  *fakeHandle
	client  *fake.Clientset
	dynamic *dynamicfake.FakeDynamicClient
	plugin  *Plugin
	hami    *plugins.Plugin
	clock   *testingclock.FakePassiveClock
}

func defaultArgs() *config.CoschedulingArgs {
	return &config.CoschedulingArgs{PermitWaitingTimeSeconds: 60, PodGroupRejectPercentage: 10, UpdatePodGroupStatus: true}
}

func newHarness(t *testing.T, args *config.CoschedulingArgs, groups []*v1alpha1.PodGroup, objs ...runtime.Object) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	client := fake.NewClientset(objs...)
	h := &harness{t: t, ctx: ctx, client: client, clock: testingclock.NewFakePassiveClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))}
	h.handle = &fakeHandle{client: client, informers: informers.NewSharedInformerFactory(client, 0), recorder: &eventLog{}}
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Node:
			h.handle.nodes = append(h.handle.nodes, o)
		case *corev1.Pod:
			if o.Spec.NodeName != "" {
				h.handle.placed = append(h.handle.placed, o)
			}
		}
	}
	var dynObjs []runtime.Object
	for _, pg := range groups {
		dynObjs = append(dynObjs, unstructuredGroup(t, pg))
	}
	h.dynamic = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{v1alpha1.Resource: "PodGroupList"}, dynObjs...)
	hami, err := plugins.New(ctx, nil, h.handle)
	if err != nil {
		t.Fatalf("HAMi plugin: %v", err)
	}
	h.hami = hami.(*plugins.Plugin)
	p, err := start(ctx, h.handle, args, h.dynamic, true)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	p.clock = h.clock
	h.plugin = p
	h.handle.informers.Start(ctx.Done())
	h.handle.informers.WaitForCacheSync(ctx.Done())
	t.Cleanup(func() {
		cancel()
		h.handle.informers.Shutdown()
	})
	h.waitFor("informers synced", func() bool { return p.synced() && h.hami.Synced() })
	return h
}

func unstructuredGroup(t *testing.T, pg *v1alpha1.PodGroup) *unstructured.Unstructured {
	t.Helper()
	pg = pg.DeepCopy()
	pg.APIVersion, pg.Kind = v1alpha1.SchemeGroupVersion.String(), "PodGroup"
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pg)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// waitFor polls cond for up to 10 s.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func podGroup(name string, minMember int32) *v1alpha1.PodGroup {
	return &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: metav1.NewTime(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))},
		Spec:       v1alpha1.PodGroupSpec{MinMember: minMember},
	}
}

// memberPod is a pod of group (none when empty) asking one card with
// memMiB of memory.
func memberPod(name, group string, memMiB int64) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
	}
	if group != "" {
		p.Labels[v1alpha1.PodGroupLabel] = group
	}
	if memMiB > 0 {
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{
			"nvidia.com/gpu":    *resource.NewQuantity(1, resource.DecimalSI),
			"nvidia.com/gpumem": *resource.NewQuantity(memMiB, resource.DecimalSI),
		}
	}
	return p
}

func boundTo(p *corev1.Pod, node string) *corev1.Pod {
	p = p.DeepCopy()
	p.Spec.NodeName = node
	p.Status.Phase = corev1.PodRunning
	return p
}

// cycle is a fresh cycle state carrying the framework's PodsToActivate.
func cycle() fwk.CycleState {
	state := framework.NewCycleState()
	state.Write(framework.PodsToActivateKey, framework.NewPodsToActivate())
	return state
}

func activatedBy(state fwk.CycleState) []string {
	data, err := state.Read(framework.PodsToActivateKey)
	if err != nil {
		return nil
	}
	var out []string
	for key := range data.(*framework.PodsToActivate).Map {
		out = append(out, key)
	}
	return out
}
