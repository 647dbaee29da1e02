// Package clustervendors builds the vendors whose annotations a tool reads
// back from a cluster (internal/allocation): those of HAMi's chart-default
// device config, of a cluster's own device-config.yaml, or of the
// scheduler's settings. Ascend and Iluvatar are switched on: a tool reads
// whatever a scheduler with them on may have written.
package clustervendors

import (
	"fmt"

	hamiconfig "github.com/hami-scheduler/hami-scheduler/apis/config"
	"github.com/hami-scheduler/hami-scheduler/apis/deviceconfig"
	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/vendors"
)

// switches turn on every section of a device config.
var switches = deviceconfig.Options{EnableAscend: true, EnableIluvatar: true}

// Chart returns every vendor of HAMi's chart-default device config
// (deviceconfig.ChartDefault).
func Chart() ([]devices.Vendor, error) {
	vendors, _, err := WithSplitCounts("")
	return vendors, err
}

// FromFileOrChart returns the vendors of the device-config.yaml at path,
// or, when path is empty, every vendor of HAMi's chart default: what a
// tool reads when the user names no device config.
func FromFileOrChart(path string) ([]devices.Vendor, error) {
	vendors, _, err := WithSplitCounts(path)
	return vendors, err
}

// WithSplitCounts is FromFileOrChart with, per vendor name, how many
// containers may share one of its cards a DRA driver publishes
// (devices.SplitCounts of the same config, as the scheduler counts them).
func WithSplitCounts(path string) ([]devices.Vendor, func(vendor string) int32, error) {
	var settings *hamiconfig.VendorSettings
	var err error
	if path == "" {
		settings, err = hamiconfig.FromDeviceConfig("(HAMi's chart default)", deviceconfig.ChartDefault, switches)
	} else {
		settings, err = hamiconfig.FromDeviceConfigFile(path, switches)
	}
	if err != nil {
		return nil, nil, err
	}
	vendors, err := FromConfigs(settings.Configs)
	if err != nil {
		return nil, nil, err
	}
	return vendors, devices.SplitCounts(vendors, settings.Configs), nil
}

// FromFile returns the vendors a HAMi device-config.yaml enables.
func FromFile(path string) ([]devices.Vendor, error) {
	settings, err := hamiconfig.FromDeviceConfigFile(path, switches)
	if err != nil {
		return nil, err
	}
	return FromConfigs(settings.Configs)
}

// FromConfigs returns the vendors of the settings, in order; none are the
// scheduler's built-in default, NVIDIA (devices/vendors.NewRegistry).
func FromConfigs(configs []devices.Config) ([]devices.Vendor, error) {
	registry, err := vendors.NewRegistry(configs)
	if err != nil {
		return nil, fmt.Errorf("vendors: %w", err)
	}
	return registry.Vendors(), nil
}
