package allocation

import (
	"github.com/hami-scheduler/hami-scheduler/devices"
)

// coreTotal is the core total the scheduler checks a card's grants
// against: the vendor's (devices.CoreAccounter, e.g. an Ascend NPU in
// hami-core mode: 100), else the registered cores.
func coreTotal(v devices.Vendor, c *devices.Card) int32 {
	if ca, ok := v.(devices.CoreAccounter); ok {
		return ca.CoreTotal(c)
	}
	return c.Cores
}
