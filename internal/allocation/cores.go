package allocation

import (
	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/ascend"
)

// hamiCoreTotal is the core total of an Ascend NPU in hami-core mode: its
// grants' cores are percent.
const hamiCoreTotal = 100

// coreTotal is the core total the scheduler checks a card's grants
// against: the registered cores, except for an Ascend NPU whose node runs
// the hami-core soft split, checked against 100 (devices/ascend's Fit,
// HAMi's rule).
func coreTotal(v devices.Vendor, c *devices.Card) int32 {
	if _, ok := v.(*ascend.Vendor); ok && c.Mode == ascend.ModeHAMiCore {
		return hamiCoreTotal
	}
	return c.Cores
}
