package dra

import (
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// Counted reports whether an allocation result takes its device from
// others, as kube-scheduler's DRA manager counts results: all but those
// with admin access.
func Counted(r *resourceapi.DeviceRequestAllocationResult) bool {
	return !ptr.Deref(r.AdminAccess, false)
}

// AddResults adds what allocation results take of the devices of known
// drivers to consumed, by kube-scheduler's rules: a result with a share
// ID is a share of the device and consumes its consumedCapacity (the
// driver's memory and cores); one without holds the device whole; one
// with admin access takes nothing.
func AddResults(consumed map[DeviceKey]Consumption, results []resourceapi.DeviceRequestAllocationResult) {
	for i := range results {
		r := &results[i]
		driver, ok := DriverNamed(r.Driver)
		if !ok || !Counted(r) {
			continue
		}
		key := DeviceKey{Driver: r.Driver, Pool: r.Pool, Device: r.Device}
		c := consumed[key]
		if r.ShareID == nil {
			c.Whole = true
		} else {
			c.Shares++
			if q, ok := r.ConsumedCapacity[driver.Memory]; ok {
				c.MemoryBytes += q.Value()
			}
			if q, ok := r.ConsumedCapacity[driver.Cores]; ok && driver.Cores != "" {
				c.Cores += q.Value()
			}
		}
		consumed[key] = c
	}
}

// ResultGrant is what one counted allocation result takes of the device's
// card, as a HAMi grant: the whole card for a result without a share ID;
// else its consumed memory (rounded up to MiB) and cores.
func ResultGrant(d Device, r *resourceapi.DeviceRequestAllocationResult) devices.Grant {
	g := devices.Grant{UUID: d.Card.UUID, Vendor: d.Driver.Vendor}
	if r.ShareID == nil {
		g.MemoryMiB, g.Cores = d.Card.MemoryMiB, d.Card.Cores
		return g
	}
	if q, ok := r.ConsumedCapacity[d.Driver.Memory]; ok {
		g.MemoryMiB = int32((q.Value() + MiB - 1) / MiB)
	}
	if q, ok := r.ConsumedCapacity[d.Driver.Cores]; ok && d.Driver.Cores != "" {
		g.Cores = int32(q.Value())
	}
	return g
}
