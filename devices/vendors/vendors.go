// Package vendors builds the registry of enabled vendors from configuration.
// Adding a vendor means adding its constructor here; plugins/ and webhook/
// only ever see devices.Vendor.
package vendors

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/amd"
	"github.com/hami-scheduler/hami-scheduler/devices/ascend"
	"github.com/hami-scheduler/hami-scheduler/devices/awsneuron"
	"github.com/hami-scheduler/hami-scheduler/devices/biren"
	"github.com/hami-scheduler/hami-scheduler/devices/enflame"
	"github.com/hami-scheduler/hami-scheduler/devices/hygon"
	"github.com/hami-scheduler/hami-scheduler/devices/mthreads"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/devices/vastai"
)

// constructors maps a vendor's config name to its constructor.
var constructors = map[string]func(devices.Config) (devices.Vendor, error){
	"nvidia":      func(c devices.Config) (devices.Vendor, error) { return nvidia.New(c) },
	"hygon":       func(c devices.Config) (devices.Vendor, error) { return hygon.New(c) },
	"ascend":      newAscend,
	"mthreads":    func(c devices.Config) (devices.Vendor, error) { return mthreads.New(c) },
	"awsneuron":   func(c devices.Config) (devices.Vendor, error) { return awsneuron.New(c) },
	"amd":         func(c devices.Config) (devices.Vendor, error) { return amd.New(c) },
	"enflame-gcu": func(c devices.Config) (devices.Vendor, error) { return enflame.NewGCU(c) },
	"enflame-drs": func(c devices.Config) (devices.Vendor, error) { return enflame.NewDRS(c) },
	"vastai":      func(c devices.Config) (devices.Vendor, error) { return vastai.New(c) },
	"biren":       func(c devices.Config) (devices.Vendor, error) { return biren.New(c) },
}

// newAscend builds one Ascend chip from the ascend.Config in c.Vendor (one
// entry of HAMi's vnpus.configs, apis/deviceconfig). The chip's settings
// all live there: the shared fields must be empty.
func newAscend(c devices.Config) (devices.Vendor, error) {
	chip, ok := c.Vendor.(ascend.Config)
	if !ok {
		return nil, fmt.Errorf("vendor %s: an Ascend chip is configured by a vnpus.configs entry of the device config file (deviceConfigFile), not by name alone", c.Name)
	}
	shared := c
	shared.Name, shared.Vendor = "", nil
	if !reflect.DeepEqual(shared, devices.Config{}) {
		return nil, fmt.Errorf("vendor %s %s: set the chip's resources and defaults in its vnpus.configs entry", c.Name, chip.CommonWord)
	}
	return ascend.New(chip)
}

// fromDeviceConfigOnly are vendors whose settings only HAMi's device
// config file carries (devices.Config.Vendor): they cannot be enabled by
// name in the plugin's vendors list.
var fromDeviceConfigOnly = map[string]bool{"ascend": true}

// Known lists the vendor names that can be configured by name (the
// plugin's vendors list), sorted. Ascend chips come from the device config
// file's vnpus.configs instead.
func Known() []string {
	names := make([]string, 0, len(constructors))
	for n := range constructors {
		if !fromDeviceConfigOnly[n] {
			names = append(names, n)
		}
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
