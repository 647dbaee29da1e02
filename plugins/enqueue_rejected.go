package plugins

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// rejectedPods remembers the pods Filter turned away for lack of devices.
// Queueing hints decide from the event alone, and the scheduler may run
// them (and retry the pod) before the device cache's own informer handler
// has applied the same event; the pod would then be rejected again from a
// stale cache and wait for the next event. So once the cache handler has
// applied a change that frees or adds cards, it activates these pods.
type rejectedPods struct {
	mu   sync.Mutex
	pods map[types.UID]*corev1.Pod
}

func (r *rejectedPods) add(pod *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pods == nil {
		r.pods = map[types.UID]*corev1.Pod{}
	}
	r.pods[pod.UID] = pod
}

func (r *rejectedPods) remove(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pods, uid)
}

// keyed returns the pods in the form PodActivator.Activate takes, but the
// members of gang (none when "").
func (r *rejectedPods) keyed(gang string) map[string]*corev1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pods) == 0 {
		return nil
	}
	out := make(map[string]*corev1.Pod, len(r.pods))
	for _, pod := range r.pods {
		if gang == "" || gangOf(pod) != gang {
			out[klog.KObj(pod).String()] = pod
		}
	}
	return out
}

// retryRejected sends the rejected pods back to the active queue (pods no
// longer waiting are ignored by the queue) after the cache has freed or
// added cards.
func (p *Plugin) retryRejected(logger klog.Logger, why string) {
	p.retryRejectedBut(logger, why, "")
}

// retryRejectedBut is retryRejected but for the members of gang: cards a
// gang's members release when their gang is turned away are not a reason
// to try that gang again at once (its members would take them and be
// turned away again, in a loop), only the other pods.
func (p *Plugin) retryRejectedBut(logger klog.Logger, why, gang string) {
	pods := p.rejected.keyed(gang)
	if len(pods) == 0 {
		return
	}
	logger.V(5).Info("Retrying pods rejected for lack of devices", "pods", len(pods), "reason", why)
	fwk.Activate(p.handle, logger, pods)
}
