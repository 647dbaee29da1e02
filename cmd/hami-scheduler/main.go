// Command hami-scheduler is kube-scheduler with HAMi's device-sharing
// plugin compiled in. Every kube-scheduler flag and KubeSchedulerConfiguration
// works unchanged; enable the plugin in a profile (see manifests/).
package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	"k8s.io/component-base/metrics/legacyregistry"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"github.com/hami-scheduler/hami-scheduler/apis/config"
	"github.com/hami-scheduler/hami-scheduler/apis/config/scheme"
	"github.com/hami-scheduler/hami-scheduler/apis/config/validation"
	"github.com/hami-scheduler/hami-scheduler/devices/vendors"
	"github.com/hami-scheduler/hami-scheduler/plugins"
	"github.com/hami-scheduler/hami-scheduler/plugins/coscheduling"
)

func main() {
	os.Exit(cli.Run(newCommand()))
}

// newCommand is kube-scheduler's command with the HAMi plugin registered
// and a check of the --config file's HAMi args that runs first, before
// anything contacts the API server: kube-scheduler validates only its
// in-tree plugins' args, and would otherwise report ours only when it
// builds its profiles, after its API client (so not at all without a
// kubeconfig), and without the field path. After the check, the scheduler
// reads the API server's version and emulates its minor
// (withServerEmulation), then sets its feature gates.
func newCommand() *cobra.Command {
	plugins.RegisterMetrics()
	options := append([]app.Option{
		app.WithPlugin(plugins.Name, newPlugin),
		app.WithPlugin(coscheduling.Name, coscheduling.New),
	}, bandPlugins()...)
	return withConfigCheck(withServerEmulation(withCardFit(withMetricsListener(app.NewSchedulerCommand(options...)))))
}

// metricsBindFlag serves the metrics registry (kube-scheduler's and
// HAMi's metrics) over plain HTTP, as HAMi's scheduler serves its own on
// --metrics-bind-address (:9395), so that HAMi's ServiceMonitor keeps
// working. Off by default: kube-scheduler's secure port serves the same
// /metrics with authentication.
const metricsBindFlag = "hami-metrics-bind-address"

// withMetricsListener adds --hami-metrics-bind-address and, when it is set,
// starts the listener before the scheduler runs (after cmd's own PreRunE).
func withMetricsListener(cmd *cobra.Command) *cobra.Command {
	fs := pflag.NewFlagSet("HAMi", pflag.ContinueOnError)
	addr := fs.String(metricsBindFlag, "", "Address (host:port, e.g. :9395) on which to serve /metrics over plain HTTP without authentication, as HAMi's scheduler does; empty (the default) serves none. kube-scheduler's secure port serves the same metrics.")
	cmd.Flags().AddFlagSet(fs)
	help := cmd.HelpFunc()
	cmd.SetHelpFunc(func(c *cobra.Command, args []string) {
		help(c, args)
		fmt.Fprintf(c.OutOrStdout(), "\nHAMi flags:\n\n%s", fs.FlagUsages())
	})
	preRunE := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		if preRunE != nil {
			if err := preRunE(c, args); err != nil {
				return err
			}
		}
		if *addr == "" {
			return nil
		}
		leaderElects, err := leaderElection(c)
		if err != nil {
			return err
		}
		_, err = serveMetrics(*addr, leaderElects)
		return err
	}
	return cmd
}

// serveMetrics listens on addr and serves the metrics registry on /metrics
// (metricsHandler) for the rest of the process; it returns the bound
// address.
func serveMetrics(addr string, leaderElects bool) (net.Addr, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", metricsBindFlag, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", metricsHandler(legacyregistry.DefaultGatherer, leaderElects))
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 15 * time.Second, ReadTimeout: 60 * time.Second}
	go func() {
		if err := server.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.Background().Error(err, "Metrics listener stopped", "address", l.Addr().String())
		}
	}()
	klog.Background().Info("Serving metrics over plain HTTP", "address", l.Addr().String(), "path", "/metrics")
	return l.Addr(), nil
}

// withConfigCheck runs checkConfigFile on the --config file, if any,
// before cmd's own PersistentPreRunE (and so before its PreRunE): applied
// last, it runs before every other hook, the API server's version read
// (withServerEmulation) included, so that a bad arg is named at once
// whether or not the server answers.
func withConfigCheck(cmd *cobra.Command) *cobra.Command {
	preRunE := cmd.PersistentPreRunE
	cmd.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		if f := c.Flags().Lookup("config"); f != nil && f.Value.String() != "" {
			if err := checkConfigFile(f.Value.String()); err != nil {
				return err
			}
		}
		if preRunE != nil {
			return preRunE(c, args)
		}
		return nil
	}
	return cmd
}

// configError lists every problem of the HAMi and Coscheduling args of a
// configuration file, one per line, with its field path in the file.
type configError struct {
	file string
	errs field.ErrorList
}

func (e *configError) Error() string {
	lines := make([]string, 0, len(e.errs)+1)
	lines = append(lines, fmt.Sprintf("invalid %s or %s args in %s:", plugins.Name, coscheduling.Name, e.file))
	for _, err := range e.errs {
		lines = append(lines, err.Error())
	}
	return strings.Join(lines, "\n")
}

// checkConfigFile decodes the file as kube-scheduler does (strictly; the
// HAMi args are typed since the plugins package registers them), then
// validates every HAMi pluginConfig and resolves its vendors, so that a bad
// device config file fails here too.
func checkConfigFile(file string) error {
	cfg, err := options.LoadConfigFromFile(klog.Background(), file)
	if err != nil {
		// On a line of its own, so that the log shows it unquoted.
		return fmt.Errorf("config file %s:\n%w", file, err)
	}
	var errs field.ErrorList
	for i, prof := range cfg.Profiles {
		for j, pc := range prof.PluginConfig {
			path := field.NewPath("profiles").Index(i).Child("pluginConfig").Index(j).Child("args")
			if pc.Name == coscheduling.Name {
				errs = append(errs, checkCoschedulingArgs(path, pc.Args)...)
				continue
			}
			if pc.Name != plugins.Name {
				continue
			}
			args, err := scheme.ArgsFrom(pc.Args)
			if err != nil {
				errs = append(errs, field.Invalid(path, fmt.Sprintf("%T", pc.Args), err.Error()))
				continue
			}
			argErrs := validation.ValidateHAMiArgs(path, args, vendors.Known())
			errs = append(errs, argErrs...)
			if len(argErrs) > 0 && args.DeviceConfigFile == "" {
				// The vendors list is invalid; it was reported.
				continue
			}
			if err := checkVendors(args); err != nil {
				if args.DeviceConfigFile != "" {
					errs = append(errs, field.Invalid(path.Child("deviceConfigFile"), args.DeviceConfigFile, err.Error()))
				} else {
					errs = append(errs, field.Invalid(path.Child("vendors"), len(args.Vendors), err.Error()))
				}
			}
		}
	}
	if len(errs) > 0 {
		return &configError{file: file, errs: errs}
	}
	return nil
}

// checkCoschedulingArgs decodes and validates the Coscheduling plugin's
// args.
func checkCoschedulingArgs(path *field.Path, obj runtime.Object) field.ErrorList {
	args, err := scheme.CoschedulingArgsFrom(obj)
	if err != nil {
		return field.ErrorList{field.Invalid(path, fmt.Sprintf("%T", obj), err.Error())}
	}
	return validation.ValidateCoschedulingArgs(path, args)
}

// checkVendors resolves the vendors the args enable (reading the device
// config file, if any) and builds them, as the plugin does when it starts.
func checkVendors(args *config.HAMiArgs) error {
	settings, err := args.ResolveVendors()
	if err != nil {
		return err
	}
	_, err = vendors.NewRegistry(settings.Configs)
	return err
}
