package simnode

import (
	"fmt"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// ascendDRAVersion is HAMi's Ascend DRA driver the model follows.
const ascendDRAVersion = "Project-HAMi/ascend-dra-driver dc1db52 (2026-08-19), HAMivNPUCore on (its chart's default)"

// ascendDRAClassSource: the chart installs no DeviceClass in HAMivNPUCore
// mode; the local cluster's is the one of the driver's kind-vnpu demo.
const ascendDRAClassSource = "Project-HAMi/ascend-dra-driver dc1db52 demo/kind-vnpu/templates/setup-resources.yaml.tpl (the chart installs none in HAMivNPUCore mode)"

// ascendDRAModel is HAMi's Ascend kubelet plugin
// (cmd/ascend-dra-kubeletplugin) with HAMivNPUCore on: every NPU one
// shareable device, limited by hami-vnpu-core.
var ascendDRAModel = &draModel{
	driver: AscendDRADriver, vendor: "ascend", words: []string{"ascend"},
	label: "HAMi Ascend DRA driver", public: ascendDRAVersion,
	devices: ascendDRADevices,
	deviceClass: func() *resourceapi.DeviceClass {
		c := celDeviceClass(AscendDRADriver, AscendDRADriver, "HAMivNPUCore", "")
		c.Spec.Selectors[0].CEL.Expression = fmt.Sprintf(
			`device.driver == %q && device.allowMultipleAllocations == true && device.attributes[%q].type == "HAMivNPUCore"`,
			AscendDRADriver, AscendDRADriver)
		return c
	},
	classSource: ascendDRAClassSource,
	prepare:     ascendDRAPrepare,
}

// ascendDRADevices is enumerateDevices for each NPU in HAMivNPUCore mode,
// named npu-<logic id>-0: the attributes index and physicalID (the logic
// id), uuid (<node>-<logic id>), model and productName (the chip), brand
// Huawei and type HAMivNPUCore; capacity memory in bytes (default the
// whole card, 1Mi to the card step 1Mi) and cores 100 (default 100, 0 to
// 100 step 1); allowMultipleAllocations.
func ascendDRADevices(node string, s Spec) []resourceapi.Device {
	chip, _ := ascendChip(s.Model)
	mem := binary(cardBytes(s))
	out := make([]resourceapi.Device, s.Cards)
	for i := range out {
		out[i] = resourceapi.Device{
			Name: "npu-" + strconv.Itoa(i) + "-0",
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"index":       intAttr(int64(i)),
				"physicalID":  intAttr(int64(i)),
				"uuid":        stringAttr(node + "-" + strconv.Itoa(i)),
				"model":       stringAttr(chip.CommonWord),
				"productName": stringAttr(chip.CommonWord),
				"brand":       stringAttr("Huawei"),
				"type":        stringAttr("HAMivNPUCore"),
			},
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
				"memory": consumable(mem, mem, binary(mebibyte), binary(mebibyte)),
				"cores":  consumable(decimal(100), decimal(100), decimal(0), decimal(1)),
			},
			AllowMultipleAllocations: ptr.To(true),
		}
	}
	return out
}

// ascendDRAPrepare is the driver's prepareResourceClaim for one claim in
// HAMivNPUCore mode (prepareDevices, applyLibvNPUConfig): every result (of
// any driver) must be a published NPU ("requested NPU is not
// allocatable"); the results' consumed capacities must agree ("capacities
// must be same across devices currently"); the first device carries
// ASCEND_VISIBLE_DEVICES (the physical ids), NPU_MEM_QUOTA (the first
// result's consumed memory in MiB, else the card's) and NPU_PRIORITY (its
// consumed cores, else 100), the others nothing.
func ascendDRAPrepare(claim *resourceapi.ResourceClaim, allocatable map[string]resourceapi.Device) ([]PreparedDevice, error) {
	wrap := func(err error) error {
		return fmt.Errorf("error preparing devices for claim %v: prepare failed: %w", claim.UID, err)
	}
	var results []resourceapi.DeviceRequestAllocationResult
	if claim.Status.Allocation != nil {
		results = claim.Status.Allocation.Devices.Results
	}
	seen := map[resourceapi.QualifiedName]resource.Quantity{}
	var ids []string
	for _, r := range results {
		dev, ok := allocatable[r.Device]
		if !ok {
			return nil, wrap(fmt.Errorf("requested NPU is not allocatable: %v", r.Device))
		}
		for name, q := range r.ConsumedCapacity {
			if prev, ok := seen[name]; ok && !prev.Equal(q) {
				return nil, wrap(fmt.Errorf("invalid capacity %s for %s: capacities must be same across devices currently", name, r.Device))
			}
			seen[name] = q
		}
		ids = append(ids, strconv.FormatInt(*dev.Attributes["physicalID"].IntValue, 10))
	}
	out := make([]PreparedDevice, 0, len(results))
	for i, r := range results {
		dev := allocatable[r.Device]
		p := preparedFrom(claim, r, dev)
		p.Enforced = true
		p.MemoryMiB = capacityOr(results[0].ConsumedCapacity, dev, "memory") / mebibyte
		p.Cores = capacityOr(results[0].ConsumedCapacity, dev, "cores")
		if i == 0 {
			p.Env = []string{
				"ASCEND_VISIBLE_DEVICES=" + strings.Join(ids, ","),
				fmt.Sprintf("NPU_MEM_QUOTA=%d", p.MemoryMiB),
				fmt.Sprintf("NPU_PRIORITY=%d", p.Cores),
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// capacityOr is the consumed capacity of that name, else the device's.
func capacityOr(consumed map[resourceapi.QualifiedName]resource.Quantity, dev resourceapi.Device, name resourceapi.QualifiedName) int64 {
	if q, ok := consumed[name]; ok {
		return q.Value()
	}
	return capacityValue(dev, name)
}
