// Package profile is hami-scheduler's KubeSchedulerConfiguration as it
// ships (manifests/scheduler-config.yaml, embedded): the hami-scheduler
// profile runs every default plugin plus HAMi (at each extension point it
// implements), and NodeResourcesFit ignores the per-card share resources
// that no node advertises. The in-process schedulers of the e2e tests, the
// benchmark and hami-local run that file, with the HAMi args they set.
package profile

import (
	"bytes"
	"fmt"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/utils/ptr"

	hamischeme "github.com/hami-scheduler/hami-scheduler/apis/config/scheme"
	hamiv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/vendors"
	"github.com/hami-scheduler/hami-scheduler/manifests"
	"github.com/hami-scheduler/hami-scheduler/plugins"
	"github.com/hami-scheduler/hami-scheduler/plugins/coscheduling"
)

const (
	// SchedulerName is the name pods put in spec.schedulerName to be placed
	// by hami-scheduler.
	SchedulerName = "hami-scheduler"
	// DefaultSchedulerName is kube-scheduler's own profile, which in-process
	// control planes run beside ours because no kube-scheduler runs there.
	DefaultSchedulerName = "default-scheduler"
	// LeaseName is hami-scheduler's leader-election lease, distinct from
	// kube-scheduler's so that both can run in one cluster.
	LeaseName = "hami-scheduler"
	// Weight is HAMi's score weight. HAMi's extender decides the node on its
	// own; here its node policy (binpack or spread of device use) must
	// outweigh the default plugins' cpu/memory spreading to have the same
	// effect.
	Weight int32 = 10
)

// Registry holds the out-of-tree plugins the profile names.
func Registry() frameworkruntime.Registry {
	r := frameworkruntime.Registry{plugins.Name: plugins.New, coscheduling.Name: coscheduling.New}
	maps.Copy(r, bandPlugins())
	return r
}

// IgnoredResources are the resources NodeResourcesFit must not look for on
// nodes: every vendor resource that describes a share of a card (memory,
// memory percentage, cores, priority), for the vendors args enable (nil:
// the defaults). The card count stays, since device plugins advertise it,
// except where the vendor says its plugin does not (devices.CountAdvertiser)
// and, from 1.34, for vendors with DRA drivers (countCheckedByHAMi).
func IgnoredResources(args *hamiv1.HAMiArgs) ([]string, error) {
	internal, err := hamischeme.ArgsFrom(args)
	if err != nil {
		return nil, err
	}
	settings, err := internal.ResolveVendors()
	if err != nil {
		return nil, err
	}
	registry, err := vendors.NewRegistry(settings.Configs)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, v := range registry.Vendors() {
		r := v.Resources()
		ca, ok := v.(devices.CountAdvertiser)
		countIgnored := ok && !ca.CountAdvertised() || countCheckedByHAMi(v)
		for _, n := range r.All() {
			if n != r.Count || countIgnored {
				names = append(names, string(n))
			}
		}
	}
	return names, nil
}

// Versioned is the KubeSchedulerConfiguration a real deployment loads:
// manifests/scheduler-config.yaml as it ships, with the HAMi plugin's args
// set when args is not nil (and NodeResourcesFit's ignoredResources
// following the vendors they enable).
func Versioned(args *hamiv1.HAMiArgs) (*configv1.KubeSchedulerConfiguration, error) {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(manifests.SchedulerConfigYAML, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decode manifests/scheduler-config.yaml: %w", err)
	}
	cfg, ok := obj.(*configv1.KubeSchedulerConfiguration)
	if !ok || len(cfg.Profiles) != 1 {
		return nil, fmt.Errorf("manifests/scheduler-config.yaml: want one v1 KubeSchedulerConfiguration profile, got %T", obj)
	}
	// Plugin args stay raw until decoded into their types, as kube-scheduler
	// does when it reads a config file.
	if err := cfg.DecodeNestedObjects(scheme.Codecs.UniversalDeserializer()); err != nil {
		return nil, fmt.Errorf("decode manifests/scheduler-config.yaml plugin args: %w", err)
	}
	if args == nil {
		return cfg, nil
	}
	ignored, err := IgnoredResources(args)
	if err != nil {
		return nil, err
	}
	p := &cfg.Profiles[0]
	a := args.DeepCopy()
	a.TypeMeta = metav1.TypeMeta{APIVersion: hamiv1.SchemeGroupVersion.String(), Kind: "HAMiArgs"}
	p.PluginConfig = slices.DeleteFunc(p.PluginConfig, func(pc configv1.PluginConfig) bool {
		return pc.Name == plugins.Name || pc.Name == "NodeResourcesFit"
	})
	p.PluginConfig = append(p.PluginConfig,
		configv1.PluginConfig{Name: "NodeResourcesFit", Args: runtime.RawExtension{Object: &configv1.NodeResourcesFitArgs{IgnoredResources: ignored}}},
		configv1.PluginConfig{Name: plugins.Name, Args: runtime.RawExtension{Object: a}})
	return cfg, nil
}

// Profiles returns the defaulted, validated profiles an in-process
// scheduler runs: hami-scheduler (with args; nil means the plugin's
// defaults) and, when withDefault is set, kube-scheduler's default profile.
func Profiles(args *hamiv1.HAMiArgs, withDefault bool) ([]config.KubeSchedulerProfile, error) {
	internal, err := withArgs(args, withDefault)
	if err != nil {
		return nil, err
	}
	return internal.Profiles, nil
}

// withArgs is the shipped configuration with args (Versioned) and, when
// withDefault is set, kube-scheduler's default profile, defaulted and
// validated.
func withArgs(args *hamiv1.HAMiArgs, withDefault bool) (*config.KubeSchedulerConfiguration, error) {
	cfg, err := Versioned(args)
	if err != nil {
		return nil, err
	}
	if withDefault {
		cfg.Profiles = append(cfg.Profiles, defaultProfile(&cfg.Profiles[0]))
	}
	return Internal(cfg)
}

// defaultProfile is kube-scheduler's default profile, beside hami: every
// profile of one scheduler sorts its queue with the same plugin, hami's
// (Coscheduling when the shipped profile enables it).
func defaultProfile(hami *configv1.KubeSchedulerProfile) configv1.KubeSchedulerProfile {
	p := configv1.KubeSchedulerProfile{SchedulerName: ptr.To(DefaultSchedulerName)}
	if hami.Plugins != nil && len(hami.Plugins.QueueSort.Enabled) > 0 {
		p.Plugins = &configv1.Plugins{QueueSort: *hami.Plugins.QueueSort.DeepCopy()}
	}
	return p
}

// ClientLimits are the QPS and burst of the scheduler's API client in the
// shipped configuration (clientConnection).
func ClientLimits() (qps float32, burst int, err error) {
	versioned, err := Versioned(nil)
	if err != nil {
		return 0, 0, err
	}
	cfg, err := Internal(versioned)
	if err != nil {
		return 0, 0, err
	}
	return cfg.ClientConnection.QPS, int(cfg.ClientConnection.Burst), nil
}

// File is the KubeSchedulerConfiguration file a hami-scheduler process
// reads to run Profiles(args, withDefault): the shipped configuration with
// those args, defaulted and written as kube-scheduler's --write-config-to
// writes its own. The benchmark runs the shipped binary with it.
func File(args *hamiv1.HAMiArgs, withDefault bool) ([]byte, error) {
	internal, err := withArgs(args, withDefault)
	if err != nil {
		return nil, err
	}
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeYAML)
	if !ok {
		return nil, fmt.Errorf("encode scheduler configuration: no YAML serializer")
	}
	var buf bytes.Buffer
	if err := scheme.Codecs.EncoderForVersion(info.Serializer, configv1.SchemeGroupVersion).Encode(internal, &buf); err != nil {
		return nil, fmt.Errorf("encode scheduler configuration: %w", err)
	}
	return buf.Bytes(), nil
}

// Internal defaults and converts a versioned configuration the way
// kube-scheduler does when it loads its config file, and validates it.
func Internal(versioned *configv1.KubeSchedulerConfiguration) (*config.KubeSchedulerConfiguration, error) {
	v := versioned.DeepCopy()
	scheme.Scheme.Default(v)
	var cfg config.KubeSchedulerConfiguration
	if err := scheme.Scheme.Convert(v, &cfg, nil); err != nil {
		return nil, fmt.Errorf("convert scheduler configuration: %w", err)
	}
	if err := validation.ValidateKubeSchedulerConfiguration(&cfg); err != nil {
		return nil, fmt.Errorf("invalid scheduler configuration: %w", err)
	}
	return &cfg, nil
}

// Decode reads a KubeSchedulerConfiguration file's contents as
// kube-scheduler does (defaults applied, internal version).
func Decode(data []byte) (*config.KubeSchedulerConfiguration, error) {
	obj, gvk, err := scheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decode scheduler configuration: %w", err)
	}
	cfg, ok := obj.(*config.KubeSchedulerConfiguration)
	if !ok {
		return nil, fmt.Errorf("decode scheduler configuration: got %v, want KubeSchedulerConfiguration", gvk)
	}
	return cfg, nil
}
