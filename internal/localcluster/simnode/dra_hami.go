package simnode

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// hamiDRAVersion is HAMi's DRA driver the model follows.
const hamiDRAVersion = "Project-HAMi/k8s-dra-driver ebeaad9 (v0.1.0, 2026-05-12), HAMiCoreSupport on (its default)"

// hamiDRAClassSource is where the local cluster's DeviceClass comes from.
const hamiDRAClassSource = "Project-HAMi/HAMi-DRA 0213e66 (hami-dra-0.0.1) charts/hami-dra/templates/hami-dra-driver/deviceclass.yaml"

// hamiDefaultSMLimit is the core limit HAMi's driver gives a device whose
// result consumed no "cores" (GetCDIContainerEdits' fallback).
const hamiDefaultSMLimit = 60

// hamiDRAModel is HAMi's kubelet plugin (cmd/hami-kubelet-plugin) with
// HAMiCoreSupport on: every full GPU is wrapped as a HAMi GPU and nothing
// else (no MIG, no VFIO) is published.
var hamiDRAModel = &draModel{
	driver: HAMiDRADriver, vendor: nvidiaKind.vendor, words: []string{"hami"},
	label: "HAMi DRA driver", public: hamiDRAVersion,
	devices: hamiDRADevices,
	// HAMi-DRA's chart (the one its webhook's claims name) has no
	// extendedResourceName; k8s-dra-driver's own chart adds nvidia.com/gpu.
	deviceClass: func() *resourceapi.DeviceClass { return celDeviceClass(HAMiDRADriver, HAMiDRADriver, "hami-gpu", "") },
	classSource: hamiDRAClassSource,
	prepare:     hamiDRAPrepare,
}

// hamiDRADevices is HAMiGpuInfo.GetDevice for each card, named
// hami-gpu-<minor> (minor = the card's index): the attributes type
// hami-gpu, uuid, minor, productName, brand, architecture,
// cudaComputeCapability, driverVersion, cudaDriverVersion, pcieBusID and
// the standard pcieRoot; capacity cores 100 (request policy default 100,
// 0 to 100 step 1) and memory in bytes (default the whole card, 1Mi to
// the card step 1Mi); allowMultipleAllocations.
func hamiDRADevices(node string, s Spec) []resourceapi.Device {
	mem := cardBytes(s)
	out := make([]resourceapi.Device, s.Cards)
	for i := range out {
		attrs := nvidiaAttributes("hami-gpu", node, i, s)
		attrs["minor"] = intAttr(int64(i))
		attrs["pcieBusID"] = stringAttr(pciBusID(i, s.Cards))
		attrs[standardPCIeRoot] = stringAttr(pcieRoot(i, s.Cards))
		out[i] = resourceapi.Device{
			Name:       "hami-gpu-" + strconv.Itoa(i),
			Attributes: attrs,
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
				"cores":  consumable(decimal(100), decimal(100), decimal(0), decimal(1)),
				"memory": consumable(binary(mem), binary(mem), binary(mebibyte), binary(mebibyte)),
			},
			AllowMultipleAllocations: ptr.To(true),
		}
	}
	return out
}

// hamiDRAPrepare is the driver's nodePrepareResource for one claim
// (DeviceState.Prepare, prepareDevices, HAMiCoreManager.GetCDIContainerEdits):
//
//   - results of other drivers are skipped;
//   - a device it does not publish: "requested device is not allocatable";
//   - every device of the claim gets CUDA_DEVICE_MEMORY_LIMIT_<i> = the
//     result's consumed memory in MiB ("<n>m"; default the whole card) and
//     CUDA_DEVICE_SM_LIMIT_<i> = its consumed cores (default 60), i
//     counting the claim's distinct devices. Results on the same device
//     merge into one entry, the later one's capacity winning. The driver
//     walks a Go map, so i's order is random there; here it is the
//     devices' names in order.
//
// The error is wrapped as the driver wraps it for the kubelet.
func hamiDRAPrepare(claim *resourceapi.ResourceClaim, allocatable map[string]resourceapi.Device) ([]PreparedDevice, error) {
	wrap := func(err error) error {
		return fmt.Errorf("error preparing devices for claim %s/%s:%s: prepare devices failed: %w", claim.Namespace, claim.Name, claim.UID, err)
	}
	results := driverResults(claim, HAMiDRADriver)
	consumed := map[string]map[resourceapi.QualifiedName]resource.Quantity{}
	for _, r := range results {
		if _, ok := allocatable[r.Device]; !ok {
			return nil, wrap(fmt.Errorf("requested device is not allocatable: %v", r.Device))
		}
		if consumed[r.Device] == nil {
			consumed[r.Device] = map[resourceapi.QualifiedName]resource.Quantity{}
		}
		maps.Copy(consumed[r.Device], r.ConsumedCapacity)
	}
	index := map[string]int{}
	for i, name := range slices.Sorted(maps.Keys(consumed)) {
		index[name] = i
	}
	out := make([]PreparedDevice, 0, len(results))
	for _, r := range results {
		dev := allocatable[r.Device]
		memMiB := capacityValue(dev, "memory") / mebibyte
		cores := int64(hamiDefaultSMLimit)
		if q, ok := consumed[r.Device]["cores"]; ok {
			if v, exact := q.AsInt64(); exact {
				cores = v
			}
		}
		if q, ok := consumed[r.Device]["memory"]; ok {
			if v, exact := q.AsInt64(); exact {
				memMiB = v / mebibyte
			}
		}
		i := index[r.Device]
		p := preparedFrom(claim, r, dev)
		p.MemoryMiB, p.Cores, p.Enforced = memMiB, cores, true
		p.Env = []string{
			fmt.Sprintf("CUDA_DEVICE_SM_LIMIT_%d=%d", i, cores),
			fmt.Sprintf("CUDA_DEVICE_MEMORY_LIMIT_%d=%dm", i, memMiB),
		}
		out = append(out, p)
	}
	return out, nil
}
