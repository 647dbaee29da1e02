package plugins

import (
	"testing"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/hygon"
	"github.com/hami-scheduler/hami-scheduler/devices/mthreads"
)

// TestSharedLockAsks: a vendor whose NodeLock is "" (HAMi takes no lock for
// it) does not make the pod take hami.io/mutex.lock; a vendor without
// devices.NodeLocker does, for init containers too.
func TestSharedLockAsks(t *testing.T) {
	mt, err := mthreads.New(devices.Config{Name: "mthreads"})
	if err != nil {
		t.Fatal(err)
	}
	dcu, err := hygon.New(devices.Config{Name: "hygon"})
	if err != nil {
		t.Fatal(err)
	}
	vendors := []devices.Vendor{mt, dcu}
	asks := devices.PodRequest{Containers: []devices.Request{{Count: 1}}}
	if sharedLockAsks(vendors, []devices.PodRequest{asks, {}}) {
		t.Error("a Moore Threads pod takes the node lock")
	}
	if !sharedLockAsks(vendors, []devices.PodRequest{asks, asks}) {
		t.Error("a pod asking Hygon too does not take the node lock")
	}
	if !sharedLockAsks(vendors, []devices.PodRequest{{}, {Containers: []devices.Request{{Count: 1}, {}}, Inits: 1}}) {
		t.Error("an init container alone does not take the node lock")
	}
}
