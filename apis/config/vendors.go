package config

import (
	"fmt"
	"strings"

	"github.com/hami-scheduler/hami-scheduler/apis/deviceconfig"
	"github.com/hami-scheduler/hami-scheduler/devices"
)

// VendorSettings are the vendors the args enable, and where they came
// from.
//
// +k8s:deepcopy-gen=false
type VendorSettings struct {
	// Configs are the enabled vendors' settings, in order.
	Configs []devices.Config
	// Source is "deviceConfigFile <path>" or "vendors".
	Source string
	// Unsupported are device-config sections that enable a vendor this
	// build does not implement.
	Unsupported []string
	// SwitchedOff are device-config sections that enable a vendor a switch
	// keeps off (vnpus.configs entries without enableAscend), each as
	// "<key> (needs <switch>)".
	SwitchedOff []string
	// Ignored are device-config keys HAMi's schema does not know (HAMi
	// ignores them too).
	Ignored []string
}

// ResolveVendors resolves the enabled vendors: from DeviceConfigFile when it is
// set (HAMi's device-config.yaml), else from the Vendors list. The args
// must have been defaulted.
func (a *HAMiArgs) ResolveVendors() (*VendorSettings, error) {
	if a.DeviceConfigFile == "" {
		s := &VendorSettings{Source: "vendors"}
		for _, v := range a.Vendors {
			s.Configs = append(s.Configs, v.DeviceConfig())
		}
		return s, nil
	}
	return FromDeviceConfigFile(a.DeviceConfigFile, deviceconfig.Options{EnableAscend: a.EnableAscend, EnableIluvatar: a.EnableIluvatar})
}

// FromDeviceConfigFile reads and validates HAMi's device-config.yaml and
// maps the sections this build serves (see deviceconfig.Config.Vendors)
// onto vendor settings.
func FromDeviceConfigFile(path string, opts deviceconfig.Options) (*VendorSettings, error) {
	file, ignored, err := deviceconfig.Load(path)
	if err != nil {
		return nil, fmt.Errorf("device config %s: %w", path, err)
	}
	return fromDeviceConfig(path, file, ignored, opts)
}

// FromDeviceConfig is FromDeviceConfigFile on the file's contents; path
// names them in errors and in Source.
func FromDeviceConfig(path string, data []byte, opts deviceconfig.Options) (*VendorSettings, error) {
	file, ignored, err := deviceconfig.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("device config %s: %w", path, err)
	}
	return fromDeviceConfig(path, file, ignored, opts)
}

// fromDeviceConfig validates a decoded device config and maps it onto
// vendor settings.
func fromDeviceConfig(path string, file *deviceconfig.Config, ignored []string, opts deviceconfig.Options) (*VendorSettings, error) {
	if errs := file.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("device config %s: %w", path, errs.ToAggregate())
	}
	s := &VendorSettings{Source: "deviceConfigFile " + path, Ignored: ignored}
	var sections []deviceconfig.Section
	s.Configs, sections = file.Vendors(opts)
	for _, sec := range sections {
		switch {
		case !sec.Enabled || sec.Served:
		case sec.Switch != "":
			s.SwitchedOff = append(s.SwitchedOff, sec.Key+" (needs "+sec.Switch+")")
		default:
			s.Unsupported = append(s.Unsupported, sec.Key)
		}
	}
	if len(s.Configs) == 0 {
		return nil, fmt.Errorf("device config %s enables no vendor this build supports (a section needs its count resource name, e.g. nvidia.resourceCountName; Ascend vnpus.configs[].resourceName and %s); configured: %s",
			path, deviceconfig.AscendSwitch, orNone(append(s.SwitchedOff, s.Unsupported...)))
	}
	return s, nil
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

// DeviceConfig maps the vendor's args onto its settings.
func (v *VendorArgs) DeviceConfig() devices.Config {
	return devices.Config{
		Name:                         strings.ToLower(v.Name),
		ResourceCountName:            v.ResourceCountName,
		ResourceMemoryName:           v.ResourceMemoryName,
		ResourceMemoryPercentageName: v.ResourceMemoryPercentageName,
		ResourceCoresName:            v.ResourceCoresName,
		ResourcePriorityName:         v.ResourcePriorityName,
		DefaultMemoryMiB:             v.DefaultMemoryMiB,
		DefaultCores:                 v.DefaultCores,
		DefaultCount:                 v.DefaultCount,
		MemoryFactor:                 v.MemoryFactor,
	}
}
