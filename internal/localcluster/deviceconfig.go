package localcluster

import (
	_ "embed"
	"os"
	"path/filepath"
)

// ChartDeviceConfig is HAMi v2.10's chart-default device-config.yaml (the
// same bytes as test/testdata/device-config.yaml): every vendor HAMi
// supports, Ascend and Iluvatar once switched on. hami-local runs mixed
// clusters on it.
//
//go:embed chart-device-config.yaml
var ChartDeviceConfig []byte

// WriteChartDeviceConfig writes ChartDeviceConfig into dir and returns its
// path.
func WriteChartDeviceConfig(dir string) (string, error) {
	path := filepath.Join(dir, "device-config.yaml")
	if err := os.WriteFile(path, ChartDeviceConfig, 0o644); err != nil {
		return "", err
	}
	return path, nil
}
