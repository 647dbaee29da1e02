package localcluster

import (
	"os"
	"path/filepath"

	"github.com/hami-scheduler/hami-scheduler/apis/deviceconfig"
)

// ChartDeviceConfig is HAMi's chart-default device-config.yaml
// (deviceconfig.ChartDefault): every vendor HAMi supports, Ascend and
// Iluvatar once switched on. hami-local runs mixed clusters on it.
var ChartDeviceConfig = deviceconfig.ChartDefault

// WriteChartDeviceConfig writes ChartDeviceConfig into dir and returns its
// path.
func WriteChartDeviceConfig(dir string) (string, error) {
	path := filepath.Join(dir, "device-config.yaml")
	if err := os.WriteFile(path, ChartDeviceConfig, 0o644); err != nil {
		return "", err
	}
	return path, nil
}
