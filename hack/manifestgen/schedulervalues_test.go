package manifestgen

import "testing"

// TestBurstQueueWaitValue: scheduler.burstQueueWait becomes the plugin's
// burstQueueWait arg; unset, the arg is left to the plugin's default.
func TestBurstQueueWaitValue(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
		want   any
	}{
		{name: "unset: the plugin's default", want: nil},
		{name: "set", values: nested("scheduler.burstQueueWait", "10s"), want: "10s"},
		{name: "in pluginArgs", values: nested("scheduler.pluginArgs.burstQueueWait", "4s"), want: "4s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := renderChart(t, tt.values, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.pluginArgs("hami-scheduler", "HAMi")["burstQueueWait"]; got != tt.want {
				t.Errorf("burstQueueWait arg %v, want %v", got, tt.want)
			}
		})
	}
}
