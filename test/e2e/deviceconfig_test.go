package e2e

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	hamiv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

// chartDeviceConfig is HAMi v2.10's chart-default device-config.yaml.
const chartDeviceConfig = "../testdata/device-config.yaml"

// A scheduler started on HAMi's chart-default device-config.yaml places the
// same pods on the same cards with the same grants as one on the built-in
// defaults.
func TestDeviceConfigFileSchedulesAsDefaults(t *testing.T) {
	t.Cleanup(func() { restartScheduler(t, nil) })
	runs := []struct {
		name string
		args *hamiv1.HAMiArgs
	}{
		{"built-in defaults", nil},
		{"HAMi chart device config", &hamiv1.HAMiArgs{DeviceConfigFile: ptr.To(chartDeviceConfig)}},
	}
	var placements [][]string
	for _, run := range runs {
		restartScheduler(t, run.args)
		e := newEnv(t, "devcfg")
		node := e.addNodes("1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB, split 10", nil)[0].Name
		var got []string
		for i, g := range []gpu{{cards: 1, memory: 3000, cores: 30}, {cards: 1, percent: 25}, {cards: 2, memory: 1000}, {cards: 1, memory: 8000, cores: 50}} {
			name := fmt.Sprintf("p%d", i)
			e.create(e.pod(name, g))
			pod := e.waitRunning(name)
			a := pod.Annotations[nvidia.AllocatedAnnotation]
			for c := 0; c < 2; c++ {
				a = strings.ReplaceAll(a, simnode.CardUUID(node, c), fmt.Sprintf("card%d", c))
			}
			got = append(got, a)
		}
		t.Logf("%s: %v", run.name, got)
		placements = append(placements, got)
	}
	for i := range placements[0] {
		if placements[0][i] != placements[1][i] {
			t.Errorf("pod p%d: %q with the built-in defaults, %q with HAMi's device config", i, placements[0][i], placements[1][i])
		}
	}
}
