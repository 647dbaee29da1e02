package nodelock

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

func TestLock(t *testing.T) {
	me := pod("default", "me")
	tests := []struct {
		name     string
		lock     string
		existing []runtime.Object
		wantErr  error
		// wantHolder is the pod named in the lock afterwards.
		wantHolder string
	}{
		{name: "free node", wantHolder: "default,me"},
		{name: "held by the same pod", lock: lockAt(time.Second, "default", "me"), wantHolder: "default,me"},
		{name: "expired lock is taken over", lock: lockAt(10*time.Minute, "default", "other"),
			existing: []runtime.Object{pod("default", "other")}, wantHolder: "default,me"},
		{name: "holder no longer exists", lock: lockAt(time.Second, "default", "gone"), wantHolder: "default,me"},
		{name: "fresh lock of a live pod is busy", lock: lockAt(time.Second, "default", "other"),
			existing: []runtime.Object{pod("default", "other")}, wantErr: ErrBusy, wantHolder: "default,other"},
		{name: "fresh legacy lock without holder is busy", lock: now.Add(-time.Second).Format(time.RFC3339),
			wantErr: ErrBusy},
		{name: "expired legacy lock is taken over", lock: now.Add(-time.Hour).Format(time.RFC3339), wantHolder: "default,me"},
		{name: "malformed lock is taken over", lock: "yesterday-ish", wantHolder: "default,me"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(append(tt.existing, node(tt.lock))...)
			l := New(client, 5*time.Minute, 0)
			l.now = func() time.Time { return now }
			err := l.Lock(context.Background(), "n1", me)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Lock err = %v, want %v", err, tt.wantErr)
			}
			n, _ := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
			got := n.Annotations[devices.NodeLock]
			if tt.wantHolder != "" && !strings.HasSuffix(got, ","+tt.wantHolder) {
				t.Errorf("lock = %q, want held by %s", got, tt.wantHolder)
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

func TestLockWaitsForRelease(t *testing.T) {
	client := fake.NewClientset(node(Value(time.Now(), pod("default", "other"))), pod("default", "other"))
	l := New(client, 5*time.Minute, 10*time.Second)
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = New(client, time.Minute, 0).Release(context.Background(), "n1", pod("default", "other"))
	}()
	if err := l.Lock(context.Background(), "n1", pod("default", "me")); err != nil {
		t.Fatalf("Lock after the holder released: %v", err)
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
	tests := []struct {
		name     string
		lock     string
		wantLock bool
	}{
		{name: "own lock is deleted", lock: Value(now, pod("default", "me")), wantLock: false},
		{name: "another pod's lock is kept", lock: Value(now, pod("default", "other")), wantLock: true},
		{name: "legacy lock is kept", lock: now.Format(time.RFC3339), wantLock: true},
		{name: "no lock", lock: "", wantLock: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(node(tt.lock))
			if err := New(client, time.Minute, 0).Release(context.Background(), "n1", pod("default", "me")); err != nil {
				t.Fatal(err)
			}
			n, _ := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
			if _, held := n.Annotations[devices.NodeLock]; held != tt.wantLock {
				t.Errorf("lock present = %v, want %v", held, tt.wantLock)
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
