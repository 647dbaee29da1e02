package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	hamiconfig "github.com/hami-scheduler/hami-scheduler/apis/config"
	"github.com/hami-scheduler/hami-scheduler/apis/deviceconfig"
	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/vendors"
	"github.com/hami-scheduler/hami-scheduler/webhook"
)

// flags are the command line of hami-webhook.
type flags struct {
	schedulerName            string
	takeOverDefaultScheduler bool
	vendorConfig             string
	deviceConfigFile         string
	selfCerts                bool
	certSecret               string
	certDNSName              string
	webhookConfiguration     string
	enableAscend             bool
	enableIluvatar           bool
	server                   webhook.ServerOptions
	healthProbeAddr          string
	metricsAddr              string
	metricsSecure            bool
	metricsCertDir           string
	version                  bool
}

func registerFlags(fs *flag.FlagSet) *flags {
	f := &flags{}
	fs.StringVar(&f.schedulerName, "scheduler-name", webhook.DefaultSchedulerName,
		"spec.schedulerName given to pods that ask for a managed device")
	fs.BoolVar(&f.takeOverDefaultScheduler, "take-over-default-scheduler", true,
		"also hand pods that name default-scheduler (the API server's default) to --scheduler-name; pods naming any other scheduler are never touched")
	fs.StringVar(&f.vendorConfig, "vendor-config", "",
		"YAML file with a 'vendors:' list, the same as the scheduler plugin's args (resource names, defaultMemoryMiB, defaultCores, defaultCount, memoryFactor, runtimeClassName, overwriteEnv, corePolicy); empty: NVIDIA with HAMi's defaults")
	fs.StringVar(&f.deviceConfigFile, "device-config-file", "",
		"HAMi's device-config.yaml (the device ConfigMap of HAMi's chart), the same file as the scheduler plugin's deviceConfigFile arg; excludes --vendor-config")
	fs.BoolVar(&f.enableAscend, "enable-ascend", false,
		"HAMi's --enable-ascend: default the pods of every vnpus.configs chip of --device-config-file (the scheduler plugin's enableAscend arg)")
	fs.BoolVar(&f.enableIluvatar, "enable-iluvatar", false,
		"HAMi's --enable-iluvatar: default the pods of every iluvatars chip of --device-config-file (the scheduler plugin's enableIluvatar arg)")
	fs.BoolVar(&f.selfCerts, "self-managed-certs", false,
		"issue and rotate the serving certificate, kept in --cert-secret (mounted at --cert-dir), and keep the caBundle of --webhook-configuration current")
	fs.StringVar(&f.certSecret, "cert-secret", "hami-system/hami-webhook-tls", "namespace/name of the Secret holding the self-managed CA and certificate")
	fs.StringVar(&f.certDNSName, "cert-dns-name", "hami-webhook.hami-system.svc", "the name the API server calls, for the self-managed certificate")
	fs.StringVar(&f.webhookConfiguration, "webhook-configuration", "hami-webhook", "the MutatingWebhookConfiguration whose caBundle self-managed certificates keep current")
	fs.StringVar(&f.server.Addr, "bind-address", ":9443", "host:port of the HTTPS webhook server")
	fs.StringVar(&f.server.CertDir, "cert-dir", "/etc/hami-webhook/certs",
		"directory with the serving certificate and key; the files are reloaded when they change")
	fs.StringVar(&f.server.CertName, "tls-cert-file-name", "tls.crt", "serving certificate (PEM, chain first) in --cert-dir")
	fs.StringVar(&f.server.KeyName, "tls-private-key-file-name", "tls.key", "serving key (PEM) in --cert-dir")
	fs.DurationVar(&f.server.ReadTimeout, "read-timeout", webhook.DefaultReadTimeout,
		"longest time to read one request, TLS handshake and body included")
	fs.DurationVar(&f.server.WriteTimeout, "write-timeout", webhook.DefaultWriteTimeout,
		"longest time to handle one request and write its answer")
	fs.Int64Var(&f.server.MaxRequestBytes, "max-request-bytes", webhook.DefaultMaxRequestBytes,
		"largest request body accepted; larger ones are answered 413")
	fs.StringVar(&f.healthProbeAddr, "health-probe-bind-address", ":8081", "host:port serving /healthz and /readyz over HTTP")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8443", "host:port serving Prometheus /metrics; 0 disables")
	fs.BoolVar(&f.metricsSecure, "metrics-secure", true,
		"serve /metrics over HTTPS to clients the API server authenticates and authorizes for the non-resource URL /metrics (needs system:auth-delegator); false: plain HTTP for anyone")
	fs.StringVar(&f.metricsCertDir, "metrics-cert-dir", "",
		"directory with tls.crt and tls.key for the metrics server; empty: a self-signed certificate")
	fs.BoolVar(&f.version, "version", false, "print the version and exit")
	return f
}

// vendorFile is the --vendor-config file.
type vendorFile struct {
	Vendors []devices.Config `json:"vendors"`
}

// options turns the flags into webhook options, reading --vendor-config.
func (f *flags) options() (webhook.Options, error) {
	var configs []devices.Config
	switch {
	case f.deviceConfigFile != "" && f.vendorConfig != "":
		return webhook.Options{}, fmt.Errorf("--device-config-file and --vendor-config exclude each other")
	case f.deviceConfigFile != "":
		settings, err := hamiconfig.FromDeviceConfigFile(f.deviceConfigFile, deviceconfig.Options{EnableAscend: f.enableAscend, EnableIluvatar: f.enableIluvatar})
		if err != nil {
			return webhook.Options{}, fmt.Errorf("--device-config-file: %w", err)
		}
		for _, key := range settings.Unsupported {
			klog.InfoS("Device config section configured but not supported by this build; its pods are not defaulted", "section", key)
		}
		for _, key := range settings.SwitchedOff {
			klog.InfoS("Device config section switched off; its pods are not defaulted", "section", key)
		}
		configs = settings.Configs
	case f.vendorConfig != "":
		raw, err := os.ReadFile(f.vendorConfig)
		if err != nil {
			return webhook.Options{}, fmt.Errorf("--vendor-config: %w", err)
		}
		var vf vendorFile
		if err := yaml.UnmarshalStrict(raw, &vf); err != nil {
			return webhook.Options{}, fmt.Errorf("--vendor-config %s: %w", f.vendorConfig, err)
		}
		configs = vf.Vendors
	}
	registry, err := vendors.NewRegistry(configs)
	if err != nil {
		return webhook.Options{}, fmt.Errorf("--vendor-config: %w", err)
	}
	if f.server.ReadTimeout <= 0 || f.server.WriteTimeout <= 0 {
		return webhook.Options{}, fmt.Errorf("--read-timeout and --write-timeout must be positive")
	}
	if f.server.MaxRequestBytes <= 0 {
		return webhook.Options{}, fmt.Errorf("--max-request-bytes must be positive")
	}
	o := webhook.Options{
		Config: webhook.Config{
			SchedulerName:            f.schedulerName,
			TakeOverDefaultScheduler: f.takeOverDefaultScheduler,
			Registry:                 registry,
		},
		Server:          f.server,
		HealthProbeAddr: f.healthProbeAddr,
		MetricsAddr:     f.metricsAddr,
		MetricsSecure:   f.metricsSecure,
		MetricsCertDir:  f.metricsCertDir,
	}
	if f.selfCerts {
		ns, name, ok := strings.Cut(f.certSecret, "/")
		if !ok {
			return webhook.Options{}, fmt.Errorf("--cert-secret %q: want namespace/name", f.certSecret)
		}
		o.Certificates = &webhook.SelfManagedCerts{SecretNamespace: ns, SecretName: name, DNSName: f.certDNSName, WebhookConfiguration: f.webhookConfiguration}
		if err := o.Certificates.Validate(); err != nil {
			return webhook.Options{}, err
		}
	}
	if err := o.Validate(); err != nil {
		return webhook.Options{}, err
	}
	return o, nil
}
