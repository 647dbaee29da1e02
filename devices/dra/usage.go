package dra

import (
	"github.com/hami-scheduler/hami-scheduler/devices"
)

// Consumption is what the allocated claims take of one device: whole, or
// by shares of its capacities.
type Consumption struct {
	// Whole: a claim holds the device to itself.
	Whole bool
	// Shares is the number of shared allocations of the device.
	Shares int32
	// MemoryBytes and Cores are what the shared allocations consume.
	MemoryBytes, Cores int64
}

// Usage is the devices' usage as HAMi's fit reads it, index-aligned with
// ds: a device held whole is full; a shared one has a sharer per share
// and the memory (rounded up to MiB) and cores its shares consume.
func Usage(ds []Device, consumed map[DeviceKey]Consumption) []devices.Usage {
	used := make([]devices.Usage, len(ds))
	for i, d := range ds {
		c, ok := consumed[d.Key]
		switch {
		case !ok:
		case c.Whole:
			used[i] = devices.Usage{Sharers: d.Card.Split, MemoryMiB: int64(d.Card.MemoryMiB), Cores: int64(d.Card.Cores)}
		default:
			used[i] = devices.Usage{Sharers: c.Shares, MemoryMiB: (c.MemoryBytes + MiB - 1) / MiB, Cores: c.Cores}
		}
	}
	return used
}
