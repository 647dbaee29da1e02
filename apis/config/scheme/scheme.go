// Package scheme registers the HAMi plugin's args into kube-scheduler's
// configuration schemes, so that a KubeSchedulerConfiguration file decodes
// them strictly into typed, defaulted objects (kind HAMiArgs) and
// --write-config-to prints them with their defaults. Import it for its side
// effect wherever the plugin is compiled in.
package scheme

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	schedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	schedulerconfigv1 "k8s.io/kubernetes/pkg/scheduler/apis/config/v1"

	"github.com/hami-scheduler/hami-scheduler/apis/config"
	configv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
)

// Scheme is kube-scheduler's configuration scheme, with the HAMi args in it.
var Scheme = schedulerscheme.Scheme

func init() {
	// kube-scheduler decodes a config file with its main scheme, but
	// defaults and converts plugin args with a scheme of their own; both
	// must know the args.
	AddToScheme(Scheme)
	AddToScheme(schedulerconfigv1.GetPluginArgConversionScheme())
}

// AddToScheme adds the internal and v1 args to a scheme.
func AddToScheme(s *runtime.Scheme) {
	utilruntime.Must(config.AddToScheme(s))
	utilruntime.Must(configv1.AddToScheme(s))
	utilruntime.Must(s.SetVersionPriority(configv1.SchemeGroupVersion))
}

// ArgsFrom returns the plugin's internal args from what the framework
// hands its factory: the typed object a configuration file decodes to, raw
// JSON (decoded strictly), or nil (every default).
func ArgsFrom(obj runtime.Object) (*config.HAMiArgs, error) {
	switch a := obj.(type) {
	case *config.HAMiArgs:
		if a == nil {
			return ArgsFrom(nil)
		}
		return a, nil
	case *configv1.HAMiArgs:
		if a == nil {
			a = &configv1.HAMiArgs{}
		}
		out := &config.HAMiArgs{}
		v := a.DeepCopy()
		Scheme.Default(v)
		if err := Scheme.Convert(v, out, nil); err != nil {
			return nil, err
		}
		return out, nil
	case nil:
		return ArgsFrom(&configv1.HAMiArgs{})
	case *runtime.Unknown:
		return decodeRaw(a.Raw)
	default:
		return nil, fmt.Errorf("args of type %T, want HAMiArgs", obj)
	}
}

var codecs = serializer.NewCodecFactory(Scheme, serializer.EnableStrict)

func decodeRaw(raw []byte) (*config.HAMiArgs, error) {
	if len(raw) == 0 {
		return ArgsFrom(nil)
	}
	gvk := configv1.SchemeGroupVersion.WithKind("HAMiArgs")
	obj, _, err := codecs.UniversalDecoder().Decode(raw, &gvk, nil)
	if err != nil {
		return nil, fmt.Errorf("decode HAMiArgs: %w", err)
	}
	out, ok := obj.(*config.HAMiArgs)
	if !ok {
		return nil, fmt.Errorf("decode HAMiArgs: got %T", obj)
	}
	return out, nil
}
