package simnode

import (
	"fmt"
	"strconv"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"
)

// nvidiaDRAVersion is NVIDIA's DRA driver the model follows.
const nvidiaDRAVersion = "kubernetes-sigs/dra-driver-nvidia-gpu 9593204 (v0.4.0-rc.1+164, 2026-08-07), " +
	"ConsumableShares on with --consumable-shares=memory"

// nvidiaDRAClassSource is where the local cluster's DeviceClass comes from.
const nvidiaDRAClassSource = "kubernetes-sigs/dra-driver-nvidia-gpu 9593204 deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-gpu.yaml"

// nvidiaDRAModel is NVIDIA's GPU kubelet plugin (cmd/gpu-kubelet-plugin)
// sharing full GPUs by memory (consumable_shares.go, "memory" mode); MIG
// and passthrough are off, so each card is one device.
var nvidiaDRAModel = &draModel{
	driver: NVIDIADRADriver, vendor: nvidiaKind.vendor, words: []string{"nvidia"},
	label: "NVIDIA DRA driver", public: nvidiaDRAVersion,
	devices: nvidiaDRADevices,
	// The chart maps nvidia.com/gpu to the class on resource.k8s.io/v1.
	deviceClass: func() *resourceapi.DeviceClass {
		return celDeviceClass(NVIDIADRADriver, NVIDIADRADriver, "gpu", "nvidia.com/gpu")
	},
	classSource: nvidiaDRAClassSource,
	prepare:     nvidiaDRAPrepare,
}

// nvidiaDRADevices is GpuInfo.GetDevice with applyConsumableShares in
// memory mode for each card, named gpu-<minor>: the attributes type gpu,
// uuid, productName, brand, architecture, cudaComputeCapability,
// driverVersion, cudaDriverVersion and the standard pciBusID, pcieRoot and
// numaNode; capacity memory in bytes (rounded down to 1Mi; request policy
// default the whole card, 1Mi to the card step 1Mi) and nothing else;
// allowMultipleAllocations.
func nvidiaDRADevices(node string, s Spec) []resourceapi.Device {
	mem := cardBytes(s) / mebibyte * mebibyte
	out := make([]resourceapi.Device, s.Cards)
	for i := range out {
		attrs := nvidiaAttributes("gpu", node, i, s)
		attrs[standardPCIBusID] = stringAttr(pciBusID(i, s.Cards))
		attrs[standardPCIeRoot] = stringAttr(pcieRoot(i, s.Cards))
		attrs[standardNUMANode] = intAttr(int64(numaOf(i, s.Cards)))
		out[i] = resourceapi.Device{
			Name:       "gpu-" + strconv.Itoa(i),
			Attributes: attrs,
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
				"memory": consumable(binary(mem), binary(mem), binary(mebibyte), binary(mebibyte)),
			},
			AllowMultipleAllocations: ptr.To(true),
		}
	}
	return out
}

// nvidiaDRAPrepare is the driver's nodePrepareResource for one claim
// (DeviceState.Prepare, getConfigResultsMap): results of other drivers are
// skipped; a device it does not publish fails with "allocatable not found
// for device"; with consumable shares, a device another prepared claim
// holds is shared (the configurations are the default ones, equal). The
// container gets the whole card through CDI: the consumed memory is the
// scheduler's account only.
func nvidiaDRAPrepare(claim *resourceapi.ResourceClaim, allocatable map[string]resourceapi.Device) ([]PreparedDevice, error) {
	results := driverResults(claim, NVIDIADRADriver)
	out := make([]PreparedDevice, 0, len(results))
	for _, r := range results {
		dev, ok := allocatable[r.Device]
		if !ok {
			return nil, fmt.Errorf("error preparing devices for claim %s/%s:%s: prepare devices failed: allocatable not found for device %q",
				claim.Namespace, claim.Name, claim.UID, r.Device)
		}
		memMiB := capacityValue(dev, "memory") / mebibyte
		if q, ok := r.ConsumedCapacity["memory"]; ok {
			memMiB = q.Value() / mebibyte
		}
		p := preparedFrom(claim, r, dev)
		p.MemoryMiB = memMiB
		out = append(out, p)
	}
	return out, nil
}
