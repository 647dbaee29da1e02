package nodelock

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func pod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func node(lock string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{}}}
	if lock != "" {
		n.Annotations[devices.NodeLock] = lock
	}
	return n
}

func lockAt(age time.Duration, ns, name string) string {
	return Value(now.Add(-age), pod(ns, name))
}

// holderPod is a pod with a UID, created at created, optionally bound to
// node and carrying HAMi's bind annotations (phase, unix bind time).
func holderPod(name string, uid types.UID, created time.Time, boundTo, phase string, bindTime time.Time) *corev1.Pod {
	p := pod("default", name)
	p.UID = uid
	p.CreationTimestamp = metav1.NewTime(created)
	p.Spec.NodeName = boundTo
	if phase != "" {
		p.Annotations = map[string]string{
			devices.BindPhase: phase,
			devices.BindTime:  strconv.FormatInt(bindTime.Unix(), 10),
		}
	}
	return p
}

func TestLock(t *testing.T) {
	me := holderPod("me", "uid-me", now.Add(-time.Hour), "", "", time.Time{})
	live := func(created time.Time) []runtime.Object {
		return []runtime.Object{holderPod("other", "uid-other", created, "", "", time.Time{})}
	}
	fresh := Value(now, me)
	tests := []struct {
		name     string
		lock     string
		existing []runtime.Object
		// written seeds what this Locker remembers writing on the node.
		written *ownLock
		wantErr error
		// wantLock is the lock value afterwards.
		wantLock string
	}{
		{name: "free node", wantLock: fresh},
		{name: "held by the same pod: kept as is",
			lock: lockAt(time.Second, "default", "me"), written: &ownLock{lockAt(time.Second, "default", "me"), "uid-me"},
			wantLock: lockAt(time.Second, "default", "me")},
		{name: "named after this pod but taken for an earlier pod of the same name: renewed, not inherited",
			lock: lockAt(time.Second, "default", "me"), written: &ownLock{lockAt(time.Second, "default", "me"), "uid-old"},
			wantLock: fresh},
		{name: "named after this pod, not written by this scheduler: renewed",
			lock: lockAt(4*time.Minute, "default", "me"), wantLock: fresh},
		{name: "own expired lock is renewed",
			lock: lockAt(10*time.Minute, "default", "me"), written: &ownLock{lockAt(10*time.Minute, "default", "me"), "uid-me"},
			wantLock: fresh},
		{name: "expired lock is taken over", lock: lockAt(10*time.Minute, "default", "other"),
			existing: live(now.Add(-time.Hour)), wantLock: fresh},
		{name: "holder no longer exists", lock: lockAt(time.Second, "default", "gone"), wantLock: fresh},
		{name: "fresh lock of a live pod is busy", lock: lockAt(time.Second, "default", "other"),
			existing: live(now.Add(-time.Hour)), wantErr: ErrBusy, wantLock: lockAt(time.Second, "default", "other")},
		{name: "holder recreated under the same name (UID this scheduler locked for differs)",
			lock: lockAt(time.Second, "default", "other"), written: &ownLock{lockAt(time.Second, "default", "other"), "uid-earlier"},
			existing: live(now.Add(-time.Hour)), wantLock: fresh},
		{name: "lock this scheduler took for the live holder's UID is busy",
			lock: lockAt(time.Second, "default", "other"), written: &ownLock{lockAt(time.Second, "default", "other"), "uid-other"},
			existing: live(now.Add(-time.Hour)), wantErr: ErrBusy, wantLock: lockAt(time.Second, "default", "other")},
		{name: "holder created after the lock (beyond the clock skew) is a namesake",
			lock: lockAt(3*time.Minute, "default", "other"), existing: live(now.Add(-time.Minute)), wantLock: fresh},
		{name: "holder created after the lock within the clock skew may be the holder",
			lock: lockAt(30*time.Second, "default", "other"), existing: live(now.Add(-10 * time.Second)),
			wantErr: ErrBusy, wantLock: lockAt(30*time.Second, "default", "other")},
		{name: "holder bound to another node",
			lock:     lockAt(time.Second, "default", "other"),
			existing: []runtime.Object{holderPod("other", "uid-other", now.Add(-time.Hour), "n2", devices.BindPhaseAllocating, now)},
			wantLock: fresh},
		{name: "holder bound here and still allocating is busy",
			lock:     lockAt(time.Second, "default", "other"),
			existing: []runtime.Object{holderPod("other", "uid-other", now.Add(-time.Hour), "n1", devices.BindPhaseAllocating, now)},
			wantErr:  ErrBusy, wantLock: lockAt(time.Second, "default", "other")},
		// HAMi's device plugin sets the phase, then releases the lock in
		// later calls: until it has, the node is busy (found by the chaos
		// suite: a take-over in between had the release delete the next
		// pod's lock).
		{name: "holder already served (bind-phase success) but not released yet is busy",
			lock:     lockAt(time.Second, "default", "other"),
			existing: []runtime.Object{holderPod("other", "uid-other", now.Add(-time.Hour), "n1", devices.BindPhaseSuccess, now)},
			wantErr:  ErrBusy, wantLock: lockAt(time.Second, "default", "other")},
		{name: "holder's hand-over failed after the lock but not released yet is busy",
			lock:     lockAt(time.Minute, "default", "other"),
			existing: []runtime.Object{holderPod("other", "uid-other", now.Add(-time.Hour), "", devices.BindPhaseFailed, now.Add(-30*time.Second))},
			wantErr:  ErrBusy, wantLock: lockAt(time.Minute, "default", "other")},
		{name: "holder's failure predates the lock (a retry holding it) is busy",
			lock:     lockAt(time.Second, "default", "other"),
			existing: []runtime.Object{holderPod("other", "uid-other", now.Add(-time.Hour), "", devices.BindPhaseFailed, now.Add(-time.Minute))},
			wantErr:  ErrBusy, wantLock: lockAt(time.Second, "default", "other")},
		{name: "lock dated beyond the clock skew in the future is stale",
			lock: lockAt(-2*time.Minute, "default", "other"), existing: live(now.Add(-time.Hour)), wantLock: fresh},
		{name: "lock dated within the clock skew in the future is busy",
			lock: lockAt(-30*time.Second, "default", "other"), existing: live(now.Add(-time.Hour)),
			wantErr: ErrBusy, wantLock: lockAt(-30*time.Second, "default", "other")},
		{name: "legacy lock dated in the future is stale", lock: now.Add(time.Hour).Format(time.RFC3339), wantLock: fresh},
		{name: "fresh legacy lock without holder is busy", lock: now.Add(-time.Second).Format(time.RFC3339),
			wantErr: ErrBusy, wantLock: now.Add(-time.Second).Format(time.RFC3339)},
		{name: "expired legacy lock is taken over", lock: now.Add(-time.Hour).Format(time.RFC3339), wantLock: fresh},
		{name: "malformed lock is taken over", lock: "yesterday-ish", wantLock: fresh},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(append(tt.existing, node(tt.lock))...)
			l := New(client, 5*time.Minute, 0)
			l.now = func() time.Time { return now }
			if tt.written != nil {
				l.written["n1"] = *tt.written
			}
			err := l.Lock(context.Background(), "n1", me)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Lock err = %v, want %v", err, tt.wantErr)
			}
			n, _ := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
			if got := n.Annotations[devices.NodeLock]; got != tt.wantLock {
				t.Errorf("lock = %q, want %q", got, tt.wantLock)
			}
			if err == nil {
				if uid, ok := l.wroteFor("n1", tt.wantLock); tt.wantLock == fresh && (!ok || uid != me.UID) {
					t.Errorf("Locker remembers %q for %q, want %q", uid, tt.wantLock, me.UID)
				}
			}
		})
	}
}

func TestLockRetriesOnConflict(t *testing.T) {
	client := fake.NewClientset(node(""))
	conflicts := 2
	client.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if patch := string(a.(k8stesting.PatchAction).GetPatch()); !strings.Contains(patch, `"resourceVersion"`) {
			t.Errorf("lock patch %s carries no resourceVersion", patch)
		}
		if conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "n1", errors.New("changed"))
		}
		return false, nil, nil
	})
	l := New(client, 5*time.Minute, 5*time.Second)
	if err := l.Lock(context.Background(), "n1", pod("default", "me")); err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if conflicts != 0 {
		t.Errorf("%d conflicts left unconsumed", conflicts)
	}
}

// TestLockWaitsForRelease: a fresh lock of a live holder is waited for,
// not taken over: the holder's device plugin releases it after Lock has
// read it once, and Lock writes its own only after that release.
func TestLockWaitsForRelease(t *testing.T) {
	client := fake.NewClientset(node(Value(time.Now(), pod("default", "other"))), pod("default", "other"))
	var reads int
	client.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		reads++
		if reads == 2 {
			// The holder's device plugin releases the lock between
			// Lock's first and second look.
			nodes := schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
			if n, err := client.Tracker().Get(nodes, "", "n1"); err == nil {
				released := n.(*corev1.Node).DeepCopy()
				delete(released.Annotations, devices.NodeLock)
				_ = client.Tracker().Update(nodes, released, "")
			}
		}
		return false, nil, nil
	})
	l := New(client, 5*time.Minute, 10*time.Second)
	var tookOver []string
	l.Observer.TookOver = func(reason string) { tookOver = append(tookOver, reason) }
	if err := l.Lock(context.Background(), "n1", pod("default", "me")); err != nil {
		t.Fatalf("Lock after the holder released: %v", err)
	}
	if len(tookOver) > 0 {
		t.Errorf("Lock took the live holder's lock over (%v) instead of waiting for its release", tookOver)
	}
	if reads < 2 {
		t.Errorf("Lock read the node %d times: it wrote its lock before the holder released", reads)
	}
	obj, err := client.Tracker().Get(schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, "", "n1")
	if err != nil {
		t.Fatal(err)
	}
	if lock := obj.(*corev1.Node).Annotations[devices.NodeLock]; !strings.HasSuffix(lock, ",default,me") {
		t.Errorf("lock %q after Lock, want it naming me", lock)
	}
}

func TestLockStopsWithContext(t *testing.T) {
	client := fake.NewClientset(node(Value(time.Now(), pod("default", "other"))), pod("default", "other"))
	l := New(client, 5*time.Minute, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Lock(ctx, "n1", pod("default", "me")); err == nil {
		t.Fatal("Lock on a cancelled context succeeded")
	}
}

func TestRelease(t *testing.T) {
	me := pod("default", "me")
	me.UID = "uid-me"
	mine := Value(now, me)
	tests := []struct {
		name     string
		lock     string
		written  *ownLock
		wantLock bool
	}{
		{name: "a lock naming the pod that this Locker did not write is kept (another replica's, for the pod's next attempt)", lock: mine, wantLock: true},
		{name: "own lock written for this UID is deleted", lock: mine, written: &ownLock{mine, "uid-me"}, wantLock: false},
		{name: "lock written for another pod of the same name is kept", lock: mine, written: &ownLock{mine, "uid-newer"}, wantLock: true},
		{name: "another pod's lock is kept", lock: Value(now, pod("default", "other")), wantLock: true},
		{name: "legacy lock is kept", lock: now.Format(time.RFC3339), wantLock: true},
		{name: "no lock", lock: "", wantLock: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(node(tt.lock))
			l := New(client, time.Minute, 0)
			if tt.written != nil {
				l.written["n1"] = *tt.written
			}
			if err := l.Release(context.Background(), "n1", me); err != nil {
				t.Fatal(err)
			}
			n, _ := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
			if _, held := n.Annotations[devices.NodeLock]; held != tt.wantLock {
				t.Errorf("lock present = %v, want %v", held, tt.wantLock)
			}
			if _, remembered := l.wroteFor("n1", tt.lock); !tt.wantLock && remembered {
				t.Error("Locker still remembers a released lock")
			}
		})
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		value   string
		ns      string
		name    string
		wantErr bool
	}{
		{value: "2026-11-29T12:00:00Z,default,p", ns: "default", name: "p"},
		{value: "2026-11-29T12:00:00Z"},
		{value: "2026-11-29T12:00:00Z,default", wantErr: true},
		{value: "noon,default,p", wantErr: true},
		{value: "", wantErr: true},
	}
	for _, tt := range tests {
		_, ns, name, err := Parse(tt.value)
		if (err != nil) != tt.wantErr || ns != tt.ns || name != tt.name {
			t.Errorf("Parse(%q) = %q, %q, %v", tt.value, ns, name, err)
		}
	}
	if v := Value(now, pod("ns", "p")); v != "2026-11-29T12:00:00Z,ns,p" {
		t.Errorf("Value = %q", v)
	}
}

// TestLockTakesTurns: while one binding cycle is asking the API server
// for a node's lock, another one for the same node waits for its turn
// without any API call.
func TestLockTakesTurns(t *testing.T) {
	client := fake.NewClientset(node(""))
	var mu sync.Mutex
	gets := 0
	firstGet, release := make(chan struct{}), make(chan struct{})
	client.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		gets++
		n := gets
		mu.Unlock()
		if n == 1 {
			close(firstGet)
			<-release
		}
		return false, nil, nil
	})
	l := New(client, 5*time.Minute, 10*time.Second)
	first := make(chan error, 1)
	go func() { first <- l.Lock(context.Background(), "n1", pod("default", "a")) }()
	<-firstGet
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := l.Lock(ctx, "n1", pod("default", "b")); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("second Lock err = %v, want it still waiting for its turn when its context ended", err)
	}
	mu.Lock()
	if gets != 1 {
		t.Errorf("%d node reads while the first cycle held the turn, want 1", gets)
	}
	mu.Unlock()
	close(release)
	if err := <-first; err != nil {
		t.Errorf("first Lock: %v", err)
	}
}

// TestLockObserver: the Observer hears each Lock call once, with its error,
// and a take-over only when the lock was written over another holder's.
func TestLockObserver(t *testing.T) {
	me := holderPod("me", "uid-me", now.Add(-time.Hour), "", "", time.Time{})
	other := holderPod("other", "uid-other", now.Add(-time.Hour), "", "", time.Time{})
	tests := []struct {
		name         string
		lock         string
		existing     []runtime.Object
		wantErr      error
		wantTakeOver string
	}{
		{name: "free node: no take-over"},
		{name: "expired", lock: lockAt(10*time.Minute, "default", "other"), existing: []runtime.Object{other}, wantTakeOver: TakeOverExpired},
		{name: "future", lock: lockAt(-2*time.Minute, "default", "other"), existing: []runtime.Object{other}, wantTakeOver: TakeOverFuture},
		{name: "malformed", lock: "yesterday-ish", wantTakeOver: TakeOverMalformed},
		{name: "holder gone", lock: lockAt(time.Second, "default", "gone"), wantTakeOver: TakeOverHolderGone},
		{name: "namesake holder", lock: lockAt(3*time.Minute, "default", "other"),
			existing: []runtime.Object{holderPod("other", "uid-other", now.Add(-time.Minute), "", "", time.Time{})}, wantTakeOver: TakeOverNotHolder},
		{name: "renewed", lock: lockAt(4*time.Minute, "default", "me"), wantTakeOver: TakeOverRenewed},
		{name: "busy: no take-over", lock: lockAt(time.Second, "default", "other"), existing: []runtime.Object{other}, wantErr: ErrBusy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(append(tt.existing, node(tt.lock))...)
			l := New(client, 5*time.Minute, 0)
			l.now = func() time.Time { return now }
			var waits []error
			var takeOvers []string
			l.Observer = Observer{
				Waited:   func(d time.Duration, err error) { waits = append(waits, err) },
				TookOver: func(reason string) { takeOvers = append(takeOvers, reason) },
			}
			err := l.Lock(context.Background(), "n1", me)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Lock err = %v, want %v", err, tt.wantErr)
			}
			if len(waits) != 1 || !errors.Is(waits[0], tt.wantErr) {
				t.Errorf("Waited calls %v, want one with %v", waits, tt.wantErr)
			}
			var want []string
			if tt.wantTakeOver != "" {
				want = []string{tt.wantTakeOver}
			}
			if strings.Join(takeOvers, ",") != strings.Join(want, ",") {
				t.Errorf("TookOver calls %q, want %q", takeOvers, want)
			}
		})
	}
}
