//go:build !k8s1.33 && !k8s1.30

package plugins

import framework "k8s.io/kube-scheduler/framework"

// SharedDRAManager: the harness runs without DRA unless a test sets one.
func (h *fakeHandle) SharedDRAManager() framework.SharedDRAManager { return h.dra }

// draManager is the harness's DRA manager type.
type draManager = framework.SharedDRAManager
