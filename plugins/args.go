package plugins

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/apis/config"
	"github.com/hami-scheduler/hami-scheduler/apis/config/scheme"
	"github.com/hami-scheduler/hami-scheduler/apis/config/validation"
	"github.com/hami-scheduler/hami-scheduler/devices/vendors"
)

// pluginArgs turns what the framework hands New (the typed HAMiArgs a
// configuration file decodes to, raw JSON, or nil) into defaulted,
// validated args.
func pluginArgs(obj runtime.Object) (*config.HAMiArgs, error) {
	args, err := scheme.ArgsFrom(obj)
	if err != nil {
		return nil, fmt.Errorf("%s args: %w", Name, err)
	}
	if errs := validation.ValidateHAMiArgs(nil, args, vendors.Known()); len(errs) > 0 {
		return nil, fmt.Errorf("%s args: %w", Name, errs.ToAggregate())
	}
	return args, nil
}

// resolveVendors reads the enabled vendors (from HAMi's device config file
// or the vendors list) and reports what it leaves out.
func resolveVendors(logger klog.Logger, args *config.HAMiArgs) (*config.VendorSettings, error) {
	settings, err := args.ResolveVendors()
	if err != nil {
		return nil, fmt.Errorf("%s args: %w", Name, err)
	}
	for _, key := range settings.Unsupported {
		logger.Info("Device config section configured but not supported by this build; its devices are not scheduled",
			"section", key, "source", settings.Source)
	}
	for _, key := range settings.SwitchedOff {
		logger.Info("Device config section switched off; its devices are not scheduled", "section", key, "source", settings.Source)
	}
	for _, key := range settings.Ignored {
		logger.Info("Device config key unknown to HAMi's schema; ignored as HAMi ignores it", "key", key, "source", settings.Source)
	}
	names := make([]string, 0, len(settings.Configs))
	for _, c := range settings.Configs {
		names = append(names, c.Name)
	}
	logger.V(2).Info("Device vendors enabled", "vendors", names, "source", settings.Source)
	return settings, nil
}
