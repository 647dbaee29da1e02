//go:build !k8s1.33 && !k8s1.30

package coscheduling

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

var _ fwk.SignPlugin = &Plugin{}

// SignPod signs every pod with nothing: Coscheduling's only part in a
// scheduling cycle before a node is chosen is PreFilter, which decides for
// the whole cycle (quorum, backoff, room for the group) and narrows no
// node, so a batch's filtering and scoring do not depend on it. Without
// it kube-scheduler turns opportunistic batching off for the profile.
func (p *Plugin) SignPod(context.Context, *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return nil, nil
}
