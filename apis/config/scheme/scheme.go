// Package scheme registers the HAMi plugin's args into kube-scheduler's
// configuration schemes, so that a KubeSchedulerConfiguration file decodes
// them strictly into typed, defaulted objects (kind HAMiArgs) and
// --write-config-to prints them with their defaults. Import it for its side
// effect wherever the plugin is compiled in.
package scheme

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// ArgsFrom returns the HAMi plugin's internal args from what the framework
// hands its factory: the typed object a configuration file decodes to, raw
// JSON (decoded strictly), or nil (every default).
func ArgsFrom(obj runtime.Object) (*config.HAMiArgs, error) {
	return argsFrom[configv1.HAMiArgs, config.HAMiArgs](obj, configv1.SchemeGroupVersion.WithKind("HAMiArgs"))
}

// CoschedulingArgsFrom is ArgsFrom for the Coscheduling plugin's args.
func CoschedulingArgsFrom(obj runtime.Object) (*config.CoschedulingArgs, error) {
	return argsFrom[configv1.CoschedulingArgs, config.CoschedulingArgs](obj, configv1.SchemeGroupVersion.WithKind("CoschedulingArgs"))
}

// versioned and internal are an args kind's v1 and internal types.
type (
	versioned[V any] interface {
		*V
		runtime.Object
	}
	internal[I any] interface {
		*I
		runtime.Object
	}
)

// argsFrom converts obj, of kind's v1 or internal type, raw or nil, to the
// internal type with defaults applied.
func argsFrom[V, I any, PV versioned[V], PI internal[I]](obj runtime.Object, gvk schema.GroupVersionKind) (PI, error) {
	switch a := obj.(type) {
	case PI:
		if a == nil {
			return argsFrom[V, I, PV, PI](nil, gvk)
		}
		return a, nil
	case PV:
		v := PV(new(V))
		if a != nil {
			v = a.DeepCopyObject().(PV)
		}
		out := PI(new(I))
		Scheme.Default(v)
		if err := Scheme.Convert(v, out, nil); err != nil {
			return nil, err
		}
		return out, nil
	case nil:
		return argsFrom[V, I, PV, PI](PV(new(V)), gvk)
	case *runtime.Unknown:
		if len(a.Raw) == 0 {
			return argsFrom[V, I, PV, PI](nil, gvk)
		}
		decoded, _, err := codecs.UniversalDecoder().Decode(a.Raw, &gvk, nil)
		if err != nil {
			return nil, fmt.Errorf("decode %s: %w", gvk.Kind, err)
		}
		out, ok := decoded.(PI)
		if !ok {
			return nil, fmt.Errorf("decode %s: got %T", gvk.Kind, decoded)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("args of type %T, want %s", obj, gvk.Kind)
	}
}

var codecs = serializer.NewCodecFactory(Scheme, serializer.EnableStrict)
