package simnode

import (
	"fmt"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The DRA drivers a simulated node may run instead of its vendor's HAMi
// device plugin (Spec.DRA), each also the name of the DeviceClass its
// chart installs.
const (
	// HAMiDRADriver is HAMi's NVIDIA DRA driver, Project-HAMi/k8s-dra-driver
	// (HAMi-core sharing), the default DRA model of NVIDIA groups.
	HAMiDRADriver = "hami-core-gpu.project-hami.io"
	// NVIDIADRADriver is NVIDIA's DRA driver,
	// kubernetes-sigs/dra-driver-nvidia-gpu, with ConsumableShares on in
	// memory mode ("dra nvidia").
	NVIDIADRADriver = "gpu.nvidia.com"
	// HygonDRADriver is Hygon's HCU DRA driver, HYGON-AI/k8s-hcu-dra-driver.
	HygonDRADriver = "dra.hygon.com"
	// AscendDRADriver is HAMi's Ascend DRA driver,
	// Project-HAMi/ascend-dra-driver, in its chart's default HAMivNPUCore
	// mode.
	AscendDRADriver = "ascend.project-hami.io"
)

const (
	// DRADriverLabel names, on a simulated DRA node, the DRA driver its
	// kubelet plugin runs (e.g. kubectl get nodes -l sim.hami.io/dra-driver).
	DRADriverLabel = "sim.hami.io/dra-driver"
	// SpecAnnotation is the node group a simulated node was built from
	// (Spec.String()): the hardware its device plugin or DRA driver finds.
	// The agent reads it to publish a DRA node's ResourceSlices, and
	// SwitchToDRA / SwitchToDevicePlugin to switch a node's kind.
	SpecAnnotation = "sim.hami.io/spec"
)

// mebibyte is the 1Mi step every modelled driver uses for memory.
const mebibyte = 1 << 20

// draModel is one DRA driver as the simulation plays it: what its kubelet
// plugin publishes for a node of a spec (one ResourceSlice of the node's
// pool, named after the node), the DeviceClass its chart installs, and its
// NodePrepareResources for one claim. Each model is written from the
// driver's public source (facts, not code), named in public.
type draModel struct {
	// driver is the driver name (ResourceSlice spec.driver, the results'
	// driver).
	driver string
	// vendor is the kind (kinds.go) whose cards the driver serves.
	vendor string
	// words pick the model after "dra" in a spec; the first model of a
	// vendor is also "dra" alone.
	words []string
	// label describes the driver in errors and documentation.
	label string
	// public names the driver, its commit and its mode.
	public string
	// devices are the devices the kubelet plugin publishes for the node.
	devices func(node string, s Spec) []resourceapi.Device
	// deviceClass is the DeviceClass as the driver's chart installs it,
	// and classSource where it comes from.
	deviceClass func() *resourceapi.DeviceClass
	classSource string
	// prepare is the driver's NodePrepareResources for one claim the
	// kubelet passed it: allocatable are the devices it published, by
	// name. An error is the claim's prepare error, as the driver words it.
	prepare func(claim *resourceapi.ResourceClaim, allocatable map[string]resourceapi.Device) ([]PreparedDevice, error)
}

// draModels lists every DRA driver the simulation plays, a vendor's
// default first.
var draModels = []*draModel{hamiDRAModel, nvidiaDRAModel, hygonDRAModel, ascendDRAModel}

// draModelFor picks the vendor's model named by word after "dra" ("": the
// vendor's first).
func draModelFor(k *kind, word string) (*draModel, error) {
	var names []string
	for _, m := range draModels {
		if m.vendor != k.vendor {
			continue
		}
		if word == "" || slices.Contains(m.words, strings.ToLower(word)) {
			return m, nil
		}
		names = append(names, m.words[0])
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("dra: no DRA driver is modelled for %s cards (DRA models: %s)", k.label, draModelList())
	}
	return nil, fmt.Errorf("dra %s: no such DRA driver for %s cards (want dra, or dra followed by one of %s)", word, k.label, strings.Join(names, ", "))
}

// draModelList names every model for errors: "NVIDIA (hami, nvidia), ...".
func draModelList() string {
	var out []string
	for _, m := range draModels {
		out = append(out, fmt.Sprintf("%s: dra %s (%s)", kindByVendor(m.vendor).label, m.words[0], m.driver))
	}
	return strings.Join(out, "; ")
}

// draModelOf is the model of a DRA spec, nil for a device-plugin spec.
func draModelOf(s Spec) *draModel {
	for _, m := range draModels {
		if m.driver == s.DRA {
			return m
		}
	}
	return nil
}

// kindByVendor is the kind of a vendor name ("nvidia" included).
func kindByVendor(vendor string) *kind {
	for _, k := range kinds {
		if k.vendor == vendor {
			return k
		}
	}
	return nvidiaKind
}

// isDefault reports whether the model is its vendor's "dra" alone.
func (m *draModel) isDefault() bool {
	for _, other := range draModels {
		if other.vendor == m.vendor {
			return other == m
		}
	}
	return false
}

// DRADevices are the devices the spec's DRA driver publishes for a node of
// that name (nil for a device-plugin spec), in the driver's order.
func (s Spec) DRADevices(node string) []resourceapi.Device {
	m := draModelOf(s)
	if m == nil {
		return nil
	}
	return m.devices(node, s)
}

// DRAModels lists the DRA drivers a spec may name, each with the words
// that pick it and the source it follows, for documentation and help texts.
func DRAModels() []string {
	var out []string
	for _, m := range draModels {
		words := `"dra ` + strings.Join(m.words, `", "dra `) + `"`
		if m.isDefault() {
			words = `"dra", ` + words
		}
		out = append(out, fmt.Sprintf("%s (%s) on %s cards: %s; as %s", m.label, m.driver, kindByVendor(m.vendor).label, words, m.public))
	}
	return out
}

// DeviceClasses are the DeviceClasses the charts of the specs' DRA drivers
// install, one per driver, in the order of draModels (none when no spec is
// a DRA one).
func DeviceClasses(specs []Spec) []*resourceapi.DeviceClass {
	var out []*resourceapi.DeviceClass
	for _, m := range draModels {
		if slices.ContainsFunc(specs, func(s Spec) bool { return s.DRA == m.driver }) {
			out = append(out, m.deviceClass())
		}
	}
	return out
}

// DeviceClassSource says where the local cluster's DeviceClass of a driver
// comes from (its chart, or the driver's demo when the chart installs
// none), "" for a driver not modelled.
func DeviceClassSource(driver string) string {
	for _, m := range draModels {
		if m.driver == driver {
			return m.classSource
		}
	}
	return ""
}

// celDeviceClass is a DeviceClass selecting the driver's devices of the
// type attribute, as every modelled chart writes it; extendedResource, when
// set, is the class's spec.extendedResourceName.
func celDeviceClass(name, driver, deviceType, extendedResource string) *resourceapi.DeviceClass {
	c := &resourceapi.DeviceClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: resourceapi.SchemeGroupVersion.String(), Kind: "DeviceClass"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: fmt.Sprintf(`device.driver == %q && device.attributes[%q].type == %q`, driver, driver, deviceType),
		}}}},
	}
	if extendedResource != "" {
		c.Spec.ExtendedResourceName = ptr.To(extendedResource)
	}
	return c
}

// consumable is a capacity with a request policy: default def, valid from
// lo to the capacity in steps of step.
func consumable(value, def, lo, step resource.Quantity) resourceapi.DeviceCapacity {
	return resourceapi.DeviceCapacity{
		Value: value,
		RequestPolicy: &resourceapi.CapacityRequestPolicy{
			Default: ptr.To(def),
			ValidRange: &resourceapi.CapacityRequestPolicyRange{
				Min: ptr.To(lo), Max: ptr.To(value.DeepCopy()), Step: ptr.To(step),
			},
		},
	}
}

// decimal and binary are quantities of the two formats the drivers use.
func decimal(v int64) resource.Quantity { return *resource.NewQuantity(v, resource.DecimalSI) }
func binary(v int64) resource.Quantity  { return *resource.NewQuantity(v, resource.BinarySI) }

func stringAttr(v string) resourceapi.DeviceAttribute {
	return resourceapi.DeviceAttribute{StringValue: ptr.To(v)}
}
func intAttr(v int64) resourceapi.DeviceAttribute {
	return resourceapi.DeviceAttribute{IntValue: ptr.To(v)}
}
func versionAttr(v string) resourceapi.DeviceAttribute {
	return resourceapi.DeviceAttribute{VersionValue: ptr.To(v)}
}

// cardBytes is a card's memory in bytes.
func cardBytes(s Spec) int64 { return int64(s.MemoryMiB) * mebibyte }

// pciBusID is a card's simulated PCI address: bus i+1 under the root
// complex of its NUMA half ("0000:01:00.0", or "0000:81:00.0" on NUMA 1).
func pciBusID(i, cards int) string {
	return fmt.Sprintf("0000:%02x:00.0", numaOf(i, cards)*0x80+i+1)
}

// pcieRoot is the root complex of a card's NUMA half, in the form of the
// standard attribute resource.kubernetes.io/pcieRoot ("pci0000:00").
func pcieRoot(i, cards int) string {
	return fmt.Sprintf("pci0000:%02x", numaOf(i, cards)*0x80)
}
