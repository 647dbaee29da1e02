package simnode

import (
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/deviceattribute"
)

// The standard attributes the modelled drivers publish.
const (
	standardPCIeRoot = deviceattribute.StandardDeviceAttributePCIeRoot
	standardPCIBusID = deviceattribute.StandardDeviceAttributePCIBusID
	standardNUMANode = deviceattribute.StandardDeviceAttributeNUMANode
)

// PreparedDevice is one device a DRA driver's NodePrepareResources
// prepared for a claim on a simulated node, and what a container using it
// gets: the DRA side's record of what the device plugins hand a container.
// Agent.PreparedDevices returns them per container.
type PreparedDevice struct {
	// Claim is the claim's namespace/name, Request the request (of the
	// claim's spec) the device serves.
	Claim, Request string
	// Driver, Pool and Device name the allocated device.
	Driver, Pool, Device string
	// UUID is the card's uuid attribute ("" when the driver publishes none).
	UUID string
	// MemoryMiB and Cores are the device's limits as the driver sets them
	// for the container: HAMi's driver hami-core's CUDA_DEVICE_MEMORY_LIMIT
	// (MiB) and CUDA_DEVICE_SM_LIMIT (percent); Hygon's the vHCU it creates
	// (compute units; both 0 for a whole card); Ascend's NPU_MEM_QUOTA
	// (MiB) and NPU_PRIORITY; NVIDIA's the consumed memory and no cores.
	MemoryMiB, Cores int64
	// Enforced tells whether the driver confines the container to
	// MemoryMiB and Cores (HAMi-core, a vHCU, HAMi's vNPU core) or only the
	// scheduler accounted them (NVIDIA's shares: the container sees the
	// whole card).
	Enforced bool
	// Env are the environment variables the driver's CDI edits set for the
	// device (those carrying the limits).
	Env []string
	// consumed is the result's consumed capacity, for the over-commit check.
	consumed map[resourceapi.QualifiedName]resource.Quantity
}

// driverResults are the claim's allocation results of the driver, in order.
func driverResults(claim *resourceapi.ResourceClaim, driver string) []resourceapi.DeviceRequestAllocationResult {
	if claim.Status.Allocation == nil {
		return nil
	}
	var out []resourceapi.DeviceRequestAllocationResult
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver == driver {
			out = append(out, r)
		}
	}
	return out
}

// attrString is a device's string attribute, "" when absent.
func attrString(d resourceapi.Device, name resourceapi.QualifiedName) string {
	if a, ok := d.Attributes[name]; ok && a.StringValue != nil {
		return *a.StringValue
	}
	return ""
}

// capacityValue is a device's capacity of that name as a number (0 when
// absent).
func capacityValue(d resourceapi.Device, name resourceapi.QualifiedName) int64 {
	c, ok := d.Capacity[name]
	if !ok {
		return 0
	}
	return c.Value.Value()
}

// preparedFrom is the record of a result on a published device, limits
// left to the driver's model.
func preparedFrom(claim *resourceapi.ResourceClaim, r resourceapi.DeviceRequestAllocationResult, dev resourceapi.Device) PreparedDevice {
	return PreparedDevice{
		Claim: claim.Namespace + "/" + claim.Name, Request: r.Request, Driver: r.Driver, Pool: r.Pool, Device: r.Device,
		UUID: attrString(dev, "uuid"), consumed: r.ConsumedCapacity,
	}
}
