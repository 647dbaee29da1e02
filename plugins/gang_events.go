package plugins

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// gangObjects finds, per profile, the PodGroup object of a scheduler-plugins
// gang member, on which the plugin records what became of the gang's
// binding (Coscheduling registers it: the HAMi plugin has no informer of
// those PodGroups).
var gangObjects sync.Map // fwk.Handle -> func(*corev1.Pod) runtime.Object

// RegisterGangObjects lets the HAMi plugin of the profile whose plugins
// are given h record events about a scheduler-plugins gang on the object
// find returns for a member (nil: none), until ctx ends.
func RegisterGangObjects(ctx context.Context, h fwk.Handle, find func(*corev1.Pod) runtime.Object) {
	gangObjects.Store(h, find)
	go func() {
		<-ctx.Done()
		gangObjects.Delete(h)
	}()
}

// gangEvent records an event on the PodGroup of the pod's gang: Kubernetes'
// own (inTreeGangObject), or scheduler-plugins' (RegisterGangObjects).
func (p *Plugin) gangEvent(pod *corev1.Pod, eventType, reason, note string) {
	recorder := p.handle.EventRecorder()
	if recorder == nil {
		return
	}
	obj := p.inTreeGangObject(pod)
	if obj == nil {
		if find, ok := gangObjects.Load(p.handle); ok {
			obj = find.(func(*corev1.Pod) runtime.Object)(pod)
		}
	}
	if obj == nil {
		return
	}
	recorder.Eventf(obj, nil, eventType, reason, "Binding", "%s", note)
}
