//go:build !k8s1.33 && !k8s1.30

package dranodes

import (
	"fmt"

	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/hami-scheduler/hami-scheduler/devices/dra"
)

// Consumed reads what every allocated claim, and every allocation in
// flight in this scheduler (kube-scheduler's own and HAMi's), takes of
// each device of a known driver: the shared DRA manager's account, which
// kube-scheduler's allocator reads too. It retries the manager's read
// while claims change under it, as kube-scheduler's allocator does.
func Consumed(claims fwk.ResourceClaimTracker) (map[dra.DeviceKey]dra.Consumption, error) {
	var state *structured.AllocatedState
	var err error
	for range 5 {
		if state, err = claims.GatherAllocatedState(); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read the claims' allocations: %w", err)
	}
	out := map[dra.DeviceKey]dra.Consumption{}
	for id := range state.AllocatedDevices {
		if key, ok := knownDevice(id); ok {
			c := out[key]
			c.Whole = true
			out[key] = c
		}
	}
	for shared := range state.AllocatedSharedDeviceIDs {
		if key, ok := knownDevice(shared.GetDeviceID()); ok {
			c := out[key]
			c.Shares++
			out[key] = c
		}
	}
	for id, capacity := range state.AggregatedCapacity {
		key, ok := knownDevice(id)
		if !ok {
			continue
		}
		driver, _ := dra.DriverNamed(key.Driver)
		c := out[key]
		if q := capacity[driver.Memory]; q != nil {
			c.MemoryBytes = q.Value()
		}
		if q := capacity[driver.Cores]; driver.Cores != "" && q != nil {
			c.Cores = q.Value()
		}
		out[key] = c
	}
	return out, nil
}

// knownDevice is the device's key when its driver is a known model.
func knownDevice(id structured.DeviceID) (dra.DeviceKey, bool) {
	driver := id.Driver.String()
	if _, ok := dra.DriverNamed(driver); !ok {
		return dra.DeviceKey{}, false
	}
	return dra.DeviceKey{Driver: driver, Pool: id.Pool.String(), Device: id.Device.String()}, true
}
