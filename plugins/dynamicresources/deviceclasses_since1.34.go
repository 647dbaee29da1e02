//go:build !k8s1.33 && !k8s1.30

package dynamicresources

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/vendors"
)

// ReasonVendorNotEnabled is the reason of the Warning event on a
// DeviceClass that maps a resource of a HAMi vendor the HAMi plugin does
// not enable.
const ReasonVendorNotEnabled = "HAMiVendorNotEnabled"

// knownResources maps every resource of every HAMi vendor that can be
// enabled by name, under its default names, to the vendor.
func knownResources() map[v1.ResourceName]string {
	out := map[v1.ResourceName]string{}
	for _, name := range vendors.Known() {
		r, err := vendors.NewRegistry([]devices.Config{{Name: name}})
		if err != nil {
			continue
		}
		for _, v := range r.Vendors() {
			for _, res := range v.Resources().All() {
				out[res] = v.Name()
			}
		}
	}
	return out
}

// watchDeviceClasses warns, with an event on the DeviceClass, of a class
// that maps (spec.extendedResourceName) a resource of a HAMi vendor the
// profile's HAMi plugin does not enable: pods asking that resource are
// then allocated by kube-scheduler's DynamicResources, a whole device of
// the class each, not shares of a card by HAMi, which is rarely what a
// HAMi user meant.
func (pl *Plugin) watchDeviceClasses(informer cache.SharedIndexInformer) error {
	known := knownResources()
	check := func(obj any) {
		class, ok := obj.(*resourceapi.DeviceClass)
		if !ok || class.Spec.ExtendedResourceName == nil {
			return
		}
		name := v1.ResourceName(*class.Spec.ExtendedResourceName)
		vendor, isHAMi := known[name]
		if !isHAMi || pl.managesResource(name) {
			return
		}
		msg := fmt.Sprintf("DeviceClass %s maps %s, a resource of HAMi's vendor %s, which this scheduler's HAMi plugin does not enable: "+
			"kube-scheduler's DynamicResources allocates pods asking it a whole device of this class each", class.Name, name, vendor)
		klog.Background().Info("DeviceClass maps a resource of a HAMi vendor not enabled", "deviceClass", klog.KObj(class), "resource", name, "vendor", vendor)
		if rec := pl.handle.EventRecorder(); rec != nil {
			rec.Eventf(class, nil, v1.EventTypeWarning, ReasonVendorNotEnabled, "Scheduling", msg)
		}
	}
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    check,
		UpdateFunc: func(_, obj any) { check(obj) },
	})
	return err
}
