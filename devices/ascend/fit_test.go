package ascend

import (
	"testing"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// TestCoreTotal: an NPU of a hami-core node is accounted against 100
// (percent), as Fit checks hami-core pods; any other NPU against its
// registered cores.
func TestCoreTotal(t *testing.T) {
	v := mustNew(t, chip(t, "Ascend910B3"))
	var _ devices.CoreAccounter = v
	tests := []struct {
		mode string
		want int32
	}{
		{mode: ModeHAMiCore, want: 100},
		{mode: ModeTemplate, want: 20},
	}
	for _, tt := range tests {
		if got := v.CoreTotal(&devices.Card{Cores: 20, Mode: tt.mode}); got != tt.want {
			t.Errorf("CoreTotal(mode %s, 20 cores) = %d, want %d", tt.mode, got, tt.want)
		}
	}
}
