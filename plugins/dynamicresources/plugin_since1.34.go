//go:build !k8s1.33 && !k8s1.30

// Package dynamicresources is kube-scheduler's DynamicResources plugin as
// hami-scheduler's profile runs it: the in-tree plugin, unchanged, shown
// each HAMi pod without the device resources the HAMi plugin places.
//
// Since Kubernetes 1.36 (DRAExtendedResource, GA in 1.37) DynamicResources
// takes charge of every extended resource of a pod once one of them is
// mapped by a DeviceClass (spec.extendedResourceName, e.g. nvidia.com/gpu
// in NVIDIA's DRA driver chart), and refuses a node that neither
// advertises nor maps each of the others. HAMi's share resources
// (nvidia.com/gpumem, gpucores, ...) are advertised by no node: they are
// HAMi's business, as NodeResourcesFit's ignoredResources say. So one such
// DeviceClass would make every HAMi pod unschedulable on every node. The
// HAMi plugin places those resources on the cards of device-plugin nodes
// (and of DRA nodes), so they are hidden from DynamicResources; a pod's
// ResourceClaims and the extended resources HAMi does not manage are left
// to it as they are.
package dynamicresources

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	fwk "k8s.io/kube-scheduler/framework"
	intree "k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	plfeature "k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	"github.com/hami-scheduler/hami-scheduler/apis/config/scheme"
	"github.com/hami-scheduler/hami-scheduler/plugins"
)

// Name is the plugin's name in a KubeSchedulerConfiguration profile; the
// profile disables the in-tree DynamicResources in its favour.
const Name = "HAMiDynamicResources"

// Plugin is the in-tree DynamicResources plugin behind a view of each pod
// without the resources the profile's HAMi plugin manages.
type Plugin struct {
	inner  *intree.DynamicResources
	handle fwk.Handle

	managedMu sync.Mutex
	managed   func(v1.ResourceName) bool
}

var (
	_ fwk.PreEnqueuePlugin         = &Plugin{}
	_ fwk.PreFilterPlugin          = &Plugin{}
	_ fwk.FilterPlugin             = &Plugin{}
	_ fwk.PostFilterPlugin         = &Plugin{}
	_ fwk.PodGroupPostFilterPlugin = &Plugin{}
	_ fwk.ScorePlugin              = &Plugin{}
	_ fwk.ReservePlugin            = &Plugin{}
	_ fwk.EnqueueExtensions        = &Plugin{}
	_ fwk.PreBindPlugin            = &Plugin{}
	_ fwk.SignPlugin               = &Plugin{}
)

// New builds the in-tree plugin with the args given (kube-scheduler's
// DynamicResourcesArgs; nil: its defaults) and the scheduler's feature
// gates, as kube-scheduler's registry builds it.
func New(ctx context.Context, obj runtime.Object, handle fwk.Handle) (fwk.Plugin, error) {
	args, err := scheme.DynamicResourcesArgsFrom(obj)
	if err != nil {
		return nil, fmt.Errorf("%s args: %w", Name, err)
	}
	fts := plfeature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate)
	inner, err := intree.New(ctx, args, handle, fts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	pl := &Plugin{inner: inner.(*intree.DynamicResources), handle: handle}
	if handle.SharedDRAManager() != nil {
		if err := pl.watchDeviceClasses(handle.SharedInformerFactory().Resource().V1().DeviceClasses().Informer()); err != nil {
			return nil, fmt.Errorf("%s: watch DeviceClasses: %w", Name, err)
		}
	}
	return pl, nil
}

// Name implements fwk.Plugin.
func (pl *Plugin) Name() string { return Name }

// managesResource reports whether the profile's HAMi plugin places the
// resource. It asks the HAMi plugin once it is built (plugins of a
// profile are built in no fixed order); a profile without it hides
// nothing.
func (pl *Plugin) managesResource(name v1.ResourceName) bool {
	pl.managedMu.Lock()
	managed := pl.managed
	if managed == nil {
		if hami := plugins.ForProfile(pl.handle); hami != nil {
			pl.managed, managed = hami.ManagesResource, hami.ManagesResource
		}
	}
	pl.managedMu.Unlock()
	return managed != nil && managed(name)
}
