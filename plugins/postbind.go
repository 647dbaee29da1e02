package plugins

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// PostBind implements fwk.PostBindPlugin: HAMi's BindingSucceed for the
// pods this plugin placed, when successEvents is on.
func (p *Plugin) PostBind(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeName string) {
	if s, err := readState(state); err != nil || s == nil || !p.args.SuccessEvents {
		return
	}
	p.event(pod, corev1.EventTypeNormal, EventBindingSucceed, "Binding",
		fmt.Sprintf("Successfully binding node [%s] to %s/%s", nodeName, pod.Namespace, pod.Name))
}
