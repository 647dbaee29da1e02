package main

import (
	"fmt"

	"k8s.io/utils/ptr"

	hamiconfig "github.com/hami-scheduler/hami-scheduler/apis/config"
	hamiv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
	"github.com/hami-scheduler/hami-scheduler/apis/deviceconfig"
	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

// vendorSetup decides which vendors the scheduler and the webhook serve.
// With a device config file, or when a node group is not NVIDIA's, both
// read HAMi's device-config.yaml (HAMi's chart default, written into dir,
// when path is empty) with Ascend and Iluvatar switched on, as HAMi's
// --enable-ascend and --enable-iluvatar do; otherwise the scheduler's
// built-in defaults (NVIDIA) apply and both results are nil.
func vendorSetup(specs []simnode.Spec, path, dir string) (*hamiv1.HAMiArgs, []devices.Config, error) {
	mixed := false
	for _, s := range specs {
		mixed = mixed || s.Vendor != ""
	}
	if path == "" && !mixed {
		return nil, nil, nil
	}
	if path == "" {
		var err error
		if path, err = localcluster.WriteChartDeviceConfig(dir); err != nil {
			return nil, nil, err
		}
	}
	settings, err := hamiconfig.FromDeviceConfigFile(path, deviceconfig.Options{EnableAscend: true, EnableIluvatar: true})
	if err != nil {
		return nil, nil, err
	}
	for _, s := range specs {
		if !served(settings.Configs, s) {
			return nil, nil, fmt.Errorf("device config %s does not enable the vendor of node group %q", path, s)
		}
	}
	args := &hamiv1.HAMiArgs{DeviceConfigFile: ptr.To(path), EnableAscend: ptr.To(true), EnableIluvatar: ptr.To(true)}
	return args, settings.Configs, nil
}

// served reports whether the configs enable the spec's vendor.
func served(configs []devices.Config, s simnode.Spec) bool {
	vendor := s.Vendor
	if vendor == "" {
		vendor = "nvidia"
	}
	for _, c := range configs {
		if c.Name == vendor {
			return true
		}
	}
	return false
}
