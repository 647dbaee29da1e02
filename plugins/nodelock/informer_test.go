package nodelock

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// informedLocker is a Locker reading the stores of informers on client,
// woken by the node informer's events as the plugin wires it. Its recheck
// is an hour, so a Lock that returns was woken by an event.
func informedLocker(t *testing.T, client *fake.Clientset, wait time.Duration) *Locker {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory := informers.NewSharedInformerFactory(client, 0)
	nodes := factory.Core().V1().Nodes()
	pods := factory.Core().V1().Pods()
	l := New(client, 5*time.Minute, wait)
	l.recheck = time.Hour
	l.ReadFrom(nodes.Lister(), pods.Lister())
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { l.NodeChanged(obj.(*corev1.Node).Name) },
		UpdateFunc: func(_, obj any) { l.NodeChanged(obj.(*corev1.Node).Name) },
	}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	client.ClearActions()
	return l
}

// reads counts the GET and LIST calls made on client since its actions were
// last cleared.
func reads(client *fake.Clientset) map[string]int {
	n := map[string]int{}
	for _, a := range client.Actions() {
		if a.GetVerb() == "get" || a.GetVerb() == "list" {
			n[a.GetVerb()+" "+a.GetResource().Resource]++
		}
	}
	return n
}

// TestLockReadsInformerStores: with informer stores, Lock reads the node
// and a live holder from them; only a holder missing from the store is
// asked of the API server, which alone may say it is gone.
func TestLockReadsInformerStores(t *testing.T) {
	me := holderPod("me", "uid-me", now.Add(-time.Hour), "", "", time.Time{})
	other := holderPod("other", "uid-other", now.Add(-time.Hour), "", "", time.Time{})
	tests := []struct {
		name      string
		lock      string
		existing  []runtime.Object
		wantErr   error
		wantReads map[string]int
	}{
		{name: "free node", wantReads: map[string]int{}},
		{name: "held by a live pod", lock: lockAt(time.Second, "default", "other"), existing: []runtime.Object{other},
			wantErr: ErrBusy, wantReads: map[string]int{}},
		{name: "holder gone: confirmed by the API server", lock: lockAt(time.Second, "default", "gone"),
			wantReads: map[string]int{"get pods": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(append(tt.existing, node(tt.lock))...)
			l := informedLocker(t, client, 0)
			l.now = func() time.Time { return now }
			err := l.Lock(context.Background(), "n1", me)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Lock err = %v, want %v", err, tt.wantErr)
			}
			got := reads(client)
			if len(got) != len(tt.wantReads) {
				t.Errorf("API reads %v, want %v", got, tt.wantReads)
			}
			for k, v := range tt.wantReads {
				if got[k] != v {
					t.Errorf("API reads %v, want %v", got, tt.wantReads)
				}
			}
		})
	}
}

// TestLockWakesOnRelease: a Lock waiting for a busy node takes the lock
// when the node informer reports its release, without polling the API
// server (the recheck is an hour).
func TestLockWakesOnRelease(t *testing.T) {
	other := pod("default", "other")
	client := fake.NewClientset(node(Value(time.Now(), other)), other)
	l := informedLocker(t, client, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	result := make(chan error, 1)
	go func() { result <- l.Lock(ctx, "n1", pod("default", "me")) }()
	release := `{"metadata":{"annotations":{"` + devices.NodeLock + `":null}}}`
	if _, err := client.CoreV1().Nodes().Patch(ctx, "n1", types.MergePatchType, []byte(release), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-result; err != nil {
		t.Fatalf("Lock after the release: %v", err)
	}
	n, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, name, _ := Parse(n.Annotations[devices.NodeLock]); name != "me" {
		t.Errorf("lock %q, want it to name me", n.Annotations[devices.NodeLock])
	}
	if got := reads(client)["get nodes"]; got != 1 {
		t.Errorf("%d node GETs, want only the test's own", got)
	}
}

// TestLockConflictWaitsForTheInformer: a lock write refused because the
// store's copy is stale is tried again once the informer has a newer copy.
func TestLockConflictWaitsForTheInformer(t *testing.T) {
	client := fake.NewClientset(node(""))
	conflicts := 1
	client.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts == 0 {
			return false, nil, nil
		}
		conflicts--
		// The newer version the write conflicted with reaches the informer.
		go func() {
			label := `{"metadata":{"labels":{"touched":"yes"}}}`
			_, _ = client.CoreV1().Nodes().Patch(context.Background(), "n1", types.MergePatchType, []byte(label), metav1.PatchOptions{})
		}()
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "n1", errors.New("changed"))
	})
	l := informedLocker(t, client, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := l.Lock(ctx, "n1", pod("default", "me")); err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if conflicts != 0 {
		t.Errorf("the conflicting write was not tried")
	}
}

func TestNewestCopy(t *testing.T) {
	withRV := func(rv string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: rv}}
	}
	tests := []struct {
		name             string
		informer, mine   string
		want             string
		wantKeptAfterUse bool
	}{
		{name: "informer behind my write", informer: "5", mine: "7", want: "7", wantKeptAfterUse: true},
		{name: "informer caught up", informer: "7", mine: "7", want: "7"},
		{name: "informer past my write", informer: "9", mine: "7", want: "9"},
		{name: "nothing written", informer: "9", want: "9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := New(fake.NewClientset(), time.Minute, 0)
			l.nodes = corelisters.NewNodeLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}))
			if tt.mine != "" {
				l.wrote(withRV(tt.mine))
			}
			if got := l.newest(withRV(tt.informer)).ResourceVersion; got != tt.want {
				t.Errorf("newest = %s, want %s", got, tt.want)
			}
			if _, kept := l.patched["n1"]; kept != tt.wantKeptAfterUse {
				t.Errorf("write kept = %v, want %v", kept, tt.wantKeptAfterUse)
			}
		})
	}
}

// TestWaitObtainable: the check a gang runs before its first member binds
// passes at once for a lock Lock could take or one naming a pod the
// caller accepts, wakes when a live holder releases, and tells a holder
// that keeps the lock past Wait; it writes nothing.
func TestWaitObtainable(t *testing.T) {
	me := holderPod("me", "uid-me", now.Add(-time.Hour), "", "", time.Time{})
	other := holderPod("other", "uid-other", now.Add(-time.Hour), "", "", time.Time{})
	sibling := holderPod("sibling", "uid-sibling", now.Add(-time.Hour), "n1", "", time.Time{})
	ours := func(_, name string) bool { return name == "sibling" }
	tests := []struct {
		name     string
		lock     string
		existing []runtime.Object
		release  bool
		wantErr  error
	}{
		{name: "free node"},
		{name: "expired lock", lock: lockAt(time.Hour, "default", "other"), existing: []runtime.Object{other}},
		{name: "holder gone", lock: lockAt(time.Second, "default", "gone")},
		{name: "held by a pod the caller accepts", lock: lockAt(time.Second, "default", "sibling"), existing: []runtime.Object{sibling}},
		{name: "held by a live pod that releases", lock: lockAt(time.Second, "default", "other"), existing: []runtime.Object{other}, release: true},
		{name: "held by a live pod past the wait", lock: lockAt(time.Second, "default", "other"), existing: []runtime.Object{other}, wantErr: ErrBusy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := append([]runtime.Object{node(tt.lock), me}, tt.existing...)
			client := fake.NewClientset(objs...)
			wait := 200 * time.Millisecond
			if tt.release {
				wait = time.Hour
			}
			l := informedLocker(t, client, wait)
			start := time.Now()
			l.now = func() time.Time { return now.Add(time.Since(start)) }
			if tt.release {
				// Released concurrently: the check finds the node free,
				// or the release's node event wakes it.
				go func() {
					release := `{"metadata":{"annotations":{"` + devices.NodeLock + `":null}}}`
					_, _ = client.CoreV1().Nodes().Patch(context.Background(), "n1", types.MergePatchType, []byte(release), metav1.PatchOptions{})
				}()
			}
			err := l.WaitObtainable(context.Background(), "n1", me, ours)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("WaitObtainable = %v, want %v", err, tt.wantErr)
			}
			for _, a := range client.Actions() {
				if a.GetVerb() == "patch" && !tt.release {
					t.Errorf("WaitObtainable wrote: %v", a)
				}
			}
		})
	}
}
