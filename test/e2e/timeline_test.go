package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// change is one watch event of a timeline: which object (what says whose),
// how it changed, and the resource version of the change. Resource versions
// of one API server are comparable across resources
// (resourceversion.CompareResourceVersion), so the timeline orders changes
// of pods and webhook configurations as etcd did, whatever order the watches
// delivered them in.
type change struct {
	what, name string
	typ        watch.EventType
	// deleting: the pod has a deletion timestamp; ready: it is Ready.
	deleting, ready bool
	rv              string
}

func (c change) String() string {
	return fmt.Sprintf("%s %s %s (deleting %v, ready %v) at %s", c.what, c.name, c.typ, c.deleting, c.ready, c.rv)
}

// timeline records the changes of the watched objects until its context ends.
type timeline struct {
	mu      sync.Mutex
	changes []change
}

// watchPods records the changes of the pods of the namespace as what.
func (tl *timeline) watchPods(ctx context.Context, t *testing.T, what, namespace string) {
	t.Helper()
	pods := controlPlane.Client.CoreV1().Pods(namespace)
	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tl.watch(ctx, t, what, list.ResourceVersion, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return pods.Watch(ctx, o)
	})
}

// watchWebhooks records the changes of MutatingWebhookConfigurations.
func (tl *timeline) watchWebhooks(ctx context.Context, t *testing.T) {
	t.Helper()
	configs := controlPlane.Client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	list, err := configs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tl.watch(ctx, t, "webhook", list.ResourceVersion, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return configs.Watch(ctx, o)
	})
}

func (tl *timeline) watch(ctx context.Context, t *testing.T, what, rv string, w func(context.Context, metav1.ListOptions) (watch.Interface, error)) {
	t.Helper()
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, &cache.ListWatch{WatchFuncWithContext: w})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer rw.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-rw.ResultChan():
				if !ok {
					return
				}
				tl.add(what, ev)
			}
		}
	}()
}

func (tl *timeline) add(what string, ev watch.Event) {
	c := change{what: what, typ: ev.Type}
	switch o := ev.Object.(type) {
	case *corev1.Pod:
		c.name, c.rv, c.deleting = o.Name, o.ResourceVersion, o.DeletionTimestamp != nil
		for _, cond := range o.Status.Conditions {
			c.ready = c.ready || (cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue)
		}
	case *admissionv1.MutatingWebhookConfiguration:
		c.name, c.rv = o.Name, o.ResourceVersion
	default:
		return
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.changes = append(tl.changes, c)
}

// since is the number of changes recorded so far: a mark for first and
// last.
func (tl *timeline) since() int {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return len(tl.changes)
}

// first and last are the earliest and latest change (by resource version)
// from the mark on that matches; ok is false when there is none.
func (tl *timeline) first(mark int, match func(change) bool) (change, bool) {
	return tl.extreme(mark, match, -1)
}

func (tl *timeline) last(mark int, match func(change) bool) (change, bool) {
	return tl.extreme(mark, match, 1)
}

func (tl *timeline) extreme(mark int, match func(change) bool, sign int) (change, bool) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var best change
	found := false
	for _, c := range tl.changes[mark:] {
		if !match(c) {
			continue
		}
		if !found || compareRV(c.rv, best.rv)*sign > 0 {
			best, found = c, true
		}
	}
	return best, found
}

// compareRV orders two resource versions of the test API server.
func compareRV(a, b string) int {
	n, err := resourceversion.CompareResourceVersion(a, b)
	if err != nil {
		panic(fmt.Sprintf("resource versions %q and %q: %v", a, b, err))
	}
	return n
}

// before fails the test unless a change matching earlier happened, as did
// one matching later, and the last of the earlier ones before the first of
// the later ones when lastOfEarlier, else the first of each.
func (tl *timeline) checkBefore(t *testing.T, mark int, earlierWhat string, earlier func(change) bool, laterWhat string, later func(change) bool, lastOfEarlier bool) {
	t.Helper()
	e, okE := tl.first(mark, earlier)
	if lastOfEarlier {
		e, okE = tl.last(mark, earlier)
	}
	l, okL := tl.first(mark, later)
	switch {
	case !okE || !okL:
		t.Errorf("timeline lacks %s (%v) or %s (%v)", earlierWhat, okE, laterWhat, okL)
	case compareRV(e.rv, l.rv) >= 0:
		t.Errorf("%s (%s) came after %s (%s)", earlierWhat, e, laterWhat, l)
	}
}
