// Package vendors builds the registry of enabled vendors from configuration.
// Adding a vendor means adding its constructor here; plugins/ and webhook/
// only ever see devices.Vendor.
package vendors

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

// constructors maps a vendor's config name to its constructor.
var constructors = map[string]func(devices.Config) (devices.Vendor, error){
	"nvidia": func(c devices.Config) (devices.Vendor, error) { return nvidia.New(c) },
}

// Known lists the vendor names that can be configured, sorted.
func Known() []string {
	names := make([]string, 0, len(constructors))
	for n := range constructors {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Default is the configuration used when none is given: NVIDIA alone.
func Default() []devices.Config {
	return []devices.Config{{Name: "nvidia"}}
}

// NewRegistry builds the registry for the configured vendors, in order.
func NewRegistry(configs []devices.Config) (*devices.Registry, error) {
	if len(configs) == 0 {
		configs = Default()
	}
	var vs []devices.Vendor
	for _, c := range configs {
		newVendor, ok := constructors[strings.ToLower(c.Name)]
		if !ok {
			return nil, fmt.Errorf("unknown vendor %q (known: %s)", c.Name, strings.Join(Known(), ", "))
		}
		v, err := newVendor(c)
		if err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	return devices.NewRegistry(vs...)
}
