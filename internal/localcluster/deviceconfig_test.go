package localcluster

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The embedded chart device config is the one the tests use.
func TestChartDeviceConfigIsTestdata(t *testing.T) {
	want, err := os.ReadFile("../../test/testdata/device-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ChartDeviceConfig, want) {
		t.Error("apis/deviceconfig/chart-default.yaml differs from test/testdata/device-config.yaml: copy it over")
	}
	path, err := WriteChartDeviceConfig(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) || filepath.Base(path) != "device-config.yaml" {
		t.Errorf("WriteChartDeviceConfig wrote %s (%d bytes, %v), want device-config.yaml with the chart's bytes", path, len(got), err)
	}
}
