package simnode

import (
	"fmt"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// hygonDRAVersion is Hygon's DRA driver the model follows.
const hygonDRAVersion = "HYGON-AI/k8s-hcu-dra-driver cbc4e9d (internal/driver/allocatable_device.go at 643ba6d)"

// hygonDRAClassSource is where the local cluster's DeviceClass comes from.
const hygonDRAClassSource = "HYGON-AI/k8s-hcu-dra-driver cbc4e9d deployments/static/hcu-dra-driver.yaml"

// hygonMaxVDevices is the driver's MaxVDevicesPerHCU: a card splits into
// at most 4 vHCUs, published as its "slices" capacity.
const hygonMaxVDevices = 4

// hygonDRAModel is Hygon's HCU kubelet plugin (internal/driver): each card
// one device, shared by vHCUs the driver creates at prepare.
var hygonDRAModel = &draModel{
	driver: HygonDRADriver, vendor: "hygon", words: []string{"hygon"},
	label: "Hygon HCU DRA driver", public: hygonDRAVersion,
	devices: hygonDRADevices,
	deviceClass: func() *resourceapi.DeviceClass {
		return celDeviceClass(HygonDRADriver, HygonDRADriver, "hcu", "")
	},
	classSource: hygonDRAClassSource,
	prepare:     hygonDRAPrepare,
}

// hygonDRADevices is AllocatableDevice.GetDevice for each card, named from
// its PCI address (hcu-0000-01-00-0): the attributes type hcu, uuid (the
// card's serial), productName, architecture (empty, as dcgm leaves it) and
// brand; capacity cores (the card's compute units, the spec's cores;
// default all, 0 to all step 1), memory in bytes (default the whole card,
// 0 to the card step 1Mi) and slices 4 (default 1, 1 to 4 step 1);
// allowMultipleAllocations.
func hygonDRADevices(node string, s Spec) []resourceapi.Device {
	product := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(s.Model, "Hygon"), "hygon"))
	cores, mem := decimal(int64(s.Cores)), binary(cardBytes(s))
	out := make([]resourceapi.Device, s.Cards)
	for i := range out {
		out[i] = resourceapi.Device{
			Name: "hcu-" + strings.NewReplacer(":", "-", ".", "-").Replace(pciBusID(i, s.Cards)),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"type":         stringAttr("hcu"),
				"uuid":         stringAttr(strings.ToUpper(cardID("HY", node, i))),
				"productName":  stringAttr(product),
				"architecture": stringAttr(""),
				"brand":        stringAttr("Hygon"),
			},
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
				"cores":  consumable(cores, cores, decimal(0), decimal(1)),
				"memory": consumable(mem, mem, binary(0), binary(mebibyte)),
				"slices": consumable(decimal(hygonMaxVDevices), decimal(1), decimal(1), decimal(1)),
			},
			AllowMultipleAllocations: ptr.To(true),
		}
	}
	return out
}

// hygonDRAPrepare is the driver's nodePrepareResource for one claim
// (prepareAllocatedDevices, requestCapacityFor): results of other drivers
// are skipped; a device it does not publish fails with "allocatable device
// not found"; the request the result serves must be an exact one of the
// claim's spec ("request ... not found in claim ... spec"). A request
// asking neither cores nor memory gets the whole card; otherwise a vHCU of
// the cores asked (at least 1; none asked: the card's) and the memory
// asked in MiB (at least 1; none asked: the card's). The driver reads the
// claim's spec, not the consumed capacity.
func hygonDRAPrepare(claim *resourceapi.ResourceClaim, allocatable map[string]resourceapi.Device) ([]PreparedDevice, error) {
	results := driverResults(claim, HygonDRADriver)
	out := make([]PreparedDevice, 0, len(results))
	for _, r := range results {
		dev, ok := allocatable[r.Device]
		if !ok {
			return nil, fmt.Errorf("allocatable device not found: %q", r.Device)
		}
		req := exactRequest(claim, r.Request)
		if req == nil {
			return nil, fmt.Errorf("request %q not found in claim %s spec", r.Request, claim.UID)
		}
		p := preparedFrom(claim, r, dev)
		p.MemoryMiB, p.Cores = capacityValue(dev, "memory")/mebibyte, capacityValue(dev, "cores")
		var asked map[resourceapi.QualifiedName]resource.Quantity
		if req.Capacity != nil {
			asked = req.Capacity.Requests
		}
		c, hasCores := asked["cores"]
		m, hasMemory := asked["memory"]
		if hasCores || hasMemory {
			p.Enforced = true
			if hasCores {
				p.Cores = max(1, c.Value())
			}
			if hasMemory {
				p.MemoryMiB = max(1, m.Value()/mebibyte)
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// exactRequest is the claim's exact request of that name, nil when there
// is none (or it is a prioritized list).
func exactRequest(claim *resourceapi.ResourceClaim, name string) *resourceapi.ExactDeviceRequest {
	for i := range claim.Spec.Devices.Requests {
		if claim.Spec.Devices.Requests[i].Name == name {
			return claim.Spec.Devices.Requests[i].Exactly
		}
	}
	return nil
}
