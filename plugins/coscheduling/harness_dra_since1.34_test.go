//go:build !k8s1.33 && !k8s1.30

package coscheduling

import framework "k8s.io/kube-scheduler/framework"

// SharedDRAManager: the harness runs without DRA.
func (h *fakeHandle) SharedDRAManager() framework.SharedDRAManager { return nil }
