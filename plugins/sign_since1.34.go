//go:build !k8s1.33 && !k8s1.30

package plugins

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

var _ fwk.SignPlugin = &Plugin{}

// SignPod lets kube-scheduler's opportunistic batching (1.35 and later)
// reuse one pod's filtering and scoring for the next pod with the same
// signature: a pod that asks for no managed device signs with nothing of
// this plugin's, a device pod with everything its fit and score read
// (podSignature); a pod whose requests do not parse, or for which the
// plugin keeps state by UID that a signature cannot carry (signable), is
// not signed, which keeps it out of any batch.
func (p *Plugin) SignPod(_ context.Context, pod *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	sig, ok := p.podSignature(pod)
	if !ok {
		return nil, fwk.NewStatus(fwk.Unschedulable, "device requests do not parse, or the pod holds or is owed something of its own")
	}
	if sig == nil {
		return nil, nil
	}
	return []fwk.SignFragment{{Key: SignatureKey, Value: sig}}, nil
}
