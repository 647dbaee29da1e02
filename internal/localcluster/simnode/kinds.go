package simnode

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/amd"
	"github.com/hami-scheduler/hami-scheduler/devices/awsneuron"
	"github.com/hami-scheduler/hami-scheduler/devices/biren"
	"github.com/hami-scheduler/hami-scheduler/devices/cambricon"
	"github.com/hami-scheduler/hami-scheduler/devices/enflame"
	"github.com/hami-scheduler/hami-scheduler/devices/hygon"
	"github.com/hami-scheduler/hami-scheduler/devices/kunlun"
	"github.com/hami-scheduler/hami-scheduler/devices/metax"
	"github.com/hami-scheduler/hami-scheduler/devices/mthreads"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/devices/vastai"
)

// kind is one vendor's node side as the simulation plays it: which card
// models name it, what its device plugin puts on the Node, and how that
// plugin's Allocate serves a container. Every vendor is one entry of
// kinds; nothing else in the package switches on the vendor.
type kind struct {
	// vendor is the vendor's config name (devices/vendors), e.g. "hygon";
	// Spec.Vendor holds it ("" for nvidia).
	vendor string
	// label describes the vendor in errors and documentation.
	label string
	// words pick the kind: the model contains one of them, compared
	// case-insensitively. NVIDIA, the last kind, takes any other model.
	words []string
	// defaultSplit is the per-card count registered when the spec names
	// none; fixedSplit, when set, is the count HAMi synthesises for the
	// vendor and the spec cannot change.
	defaultSplit, fixedSplit int32
	// fixedMemoryMiB, when set, is the memory HAMi synthesises per card:
	// the spec must say it. memoryUnitMiB, when set, is the unit the
	// node's capacity counts memory in: the spec's memory must be a
	// multiple. (Enflame GCU and AWS Neuron register no memory: the
	// spec's is not used.)
	fixedMemoryMiB, memoryUnitMiB int32
	// check refuses a spec the vendor cannot register (nil: none).
	check func(s Spec) error
	// inventory writes the spec's cards onto the node as the vendor's
	// device plugin (and the kubelet's capacity) would.
	inventory func(n *corev1.Node, s Spec)
	// plugins are the vendor's device plugin endpoints as the kubelet
	// sees them, one per registered resource (Ascend and Iluvatar: one per
	// chip of HAMi's chart).
	plugins []plugin
	// public names the device plugin the node side follows, for the
	// vendors whose plugin is published ("" for those modelled on HAMi's
	// keys alone).
	public string
}

// nvidiaKind is the default kind.
var nvidiaKind = &kind{
	vendor: "nvidia", label: "NVIDIA", defaultSplit: DefaultSplit,
	inventory: nvidiaInventory,
	plugins: endpoints(&hamiPlugin{
		toAllocate: nvidia.ToAllocateAnnotation, word: nvidia.VendorWord, allocated: nvidia.AllocatedAnnotation,
		lock: devices.NodeLock, countCheck: true,
	}, nvidia.DefaultCountName),
	public: "HAMi v2.10 (pkg/device-plugin/nvidiadevice)",
}

// kinds lists every vendor, most specific words first; nvidia is last.
var kinds = []*kind{
	{
		vendor: "ascend", label: "Huawei Ascend", words: []string{"ascend"}, defaultSplit: 4,
		check: func(s Spec) error { _, err := ascendChip(s.Model); return err }, inventory: ascendInventory,
		plugins: ascendPlugins(), public: ascendPluginVersion,
	},
	{
		vendor: "iluvatar", label: "Iluvatar", words: []string{"iluvatar", "bi-v1", "mr-v"}, defaultSplit: 10,
		check: func(s Spec) error { _, err := iluvatarChip(s.Model); return err }, inventory: iluvatarInventory,
		plugins: iluvatarPlugins(),
	},
	{
		vendor: "hygon", label: "Hygon DCU", words: []string{"hygon", "dcu"}, defaultSplit: 4, inventory: hygonInventory,
		plugins: endpoints(&hygonPlugin{}, hygon.DefaultCountName), public: hygonPluginVersion,
	},
	{
		vendor: "cambricon", label: "Cambricon MLU", words: []string{"cambricon", "mlu"}, fixedSplit: 100,
		memoryUnitMiB: cambricon.MemoryUnitMiB, inventory: cambriconInventory,
		plugins: endpoints(&cambriconPlugin{}, cambricon.DefaultCoresName, cambricon.DefaultMemoryName, cambriconRealCountsName),
		public:  cambricon.PluginVersion,
	},
	{
		vendor: "metax-sgpu", label: "MetaX sGPU", words: []string{"sgpu"}, defaultSplit: 16, inventory: metaxSGPUInventory,
		plugins: endpoints(&hamiPlugin{
			toAllocate: metax.SGPUToAllocateAnnotation, word: metax.SGPUWord, allocated: metax.SGPUAllocatedAnnotation, lock: devices.NodeLock,
		}, metax.DefaultSGPUCountName),
	},
	{
		vendor: "metax", label: "MetaX GPU", words: []string{"metax"}, fixedSplit: 1, fixedMemoryMiB: metax.GPUMemoryMiB,
		inventory: metaxGPUInventory,
		plugins: endpoints(&hamiPlugin{
			toAllocate: metax.GPUToAllocateAnnotation, word: metax.GPUWord, allocated: metax.GPUAllocatedAnnotation,
		}, metax.DefaultGPUCountName),
	},
	{
		vendor: "kunlun-vxpu", label: "Kunlunxin vXPU", words: []string{"vxpu"}, defaultSplit: 4, inventory: kunlunVXPUInventory,
		plugins: endpoints(&hamiPlugin{
			toAllocate: kunlun.VXPUToAllocateAnnotation, word: kunlun.VXPUWord, allocated: kunlun.VXPUAllocatedAnnotation, lock: devices.NodeLock,
		}, kunlun.DefaultVXPUCountName),
	},
	{
		vendor: "kunlun", label: "Kunlunxin XPU", words: []string{"kunlun", "xpu"}, fixedSplit: 100, fixedMemoryMiB: kunlun.CardMemoryMiB,
		inventory: capacityInventory(kunlun.DefaultCountName, 1),
		plugins:   endpoints(&hamiPlugin{allocated: kunlun.AllocatedAnnotation}, kunlun.DefaultCountName),
	},
	{
		vendor: "mthreads", label: "Moore Threads", words: []string{"moore threads", "mthreads", "mtt"}, fixedSplit: mthreads.Split,
		memoryUnitMiB: mthreads.MemoryUnitMiB, inventory: mthreadsInventory,
		plugins: endpoints(&hamiPlugin{allocated: mthreads.AllocatedAnnotation}, mthreads.DefaultCountName),
	},
	{
		vendor: "awsneuron", label: "AWS Neuron", words: []string{"neuron", "inferentia", "trainium"}, defaultSplit: awsneuron.SplitCores,
		check: checkNeuron, inventory: neuronInventory,
		plugins: endpoints(&hamiPlugin{
			allocated: awsneuron.AllocatedAnnotation, served: map[string]string{awsneuron.AllocatedFlagAnnotation: "true"},
		}, awsneuron.DefaultCountName, awsneuron.DefaultCoresName),
	},
	{
		vendor: "amd", label: "AMD", words: []string{"amd", "instinct"}, defaultSplit: 4, inventory: amdInventory,
		plugins: endpoints(&amdPlugin{}, amd.DefaultCountName), public: amdPluginVersion,
	},
	{
		vendor: "enflame-drs", label: "Enflame DRS GCU", words: []string{"drs"}, defaultSplit: 6, memoryUnitMiB: 1024,
		check: checkDRS, inventory: drsInventory,
		plugins: endpoints(&gcusharePlugin{}, enflame.DefaultDRSName), public: gcusharePluginVersion,
	},
	{
		vendor: "enflame-gcu", label: "Enflame GCU", words: []string{"enflame", "gcu"}, fixedSplit: 1,
		inventory: capacityInventory(enflame.DefaultGCUName, 1),
		plugins: endpoints(&hamiPlugin{
			toAllocate: enflame.GCUToAllocateAnnotation, word: enflame.GCUWord, allocated: enflame.GCUAllocatedAnnotation,
		}, enflame.DefaultGCUName),
	},
	{
		vendor: "vastai", label: "Vastai", words: []string{"vastai"}, defaultSplit: 1, inventory: vastaiInventory,
		plugins: endpoints(&hamiPlugin{
			toAllocate: vastai.ToAllocateAnnotation, word: vastai.VendorWord, allocated: vastai.AllocatedAnnotation, lock: devices.NodeLock,
		}, vastai.DefaultCountName),
	},
	{
		vendor: "biren", label: "Biren", words: []string{"biren"}, defaultSplit: 1, inventory: birenInventory,
		plugins: endpoints(&birenPlugin{}, biren.DefaultCountName), public: birenPluginVersion,
	},
	nvidiaKind,
}

// kindOfModel picks the kind whose words the model contains; NVIDIA when
// none does.
func kindOfModel(model string) *kind {
	lower := strings.ToLower(model)
	for _, k := range kinds {
		for _, w := range k.words {
			if strings.Contains(lower, w) {
				return k
			}
		}
	}
	return nvidiaKind
}

// kindOf is the spec's kind.
func kindOf(s Spec) *kind {
	if s.Vendor == "" {
		return nvidiaKind
	}
	for _, k := range kinds {
		if k.vendor == s.Vendor {
			return k
		}
	}
	return nvidiaKind
}

// Vendors lists the vendors a spec may name, each with the model words
// that pick it, for documentation and help texts.
func Vendors() []string {
	var out []string
	for _, k := range kinds {
		words := "any other model"
		if len(k.words) > 0 {
			words = `"` + strings.Join(k.words, `", "`) + `"`
		}
		plugin := "simulated device plugin (no public one)"
		if k.public != "" {
			plugin = "device plugin as " + k.public
		}
		out = append(out, fmt.Sprintf("%s (%s): %s; %s", k.label, k.vendor, words, plugin))
	}
	return out
}

// checkMemory applies the kind's memory rules to a parsed spec.
func (k *kind) checkMemory(s Spec) error {
	switch {
	case k.fixedMemoryMiB > 0 && s.MemoryMiB != k.fixedMemoryMiB:
		return fmt.Errorf("%s cards have %d MiB (HAMi synthesises them from the node's capacity), not %d", k.label, k.fixedMemoryMiB, s.MemoryMiB)
	case k.memoryUnitMiB > 0 && s.MemoryMiB%k.memoryUnitMiB != 0:
		return fmt.Errorf("%s memory %d MiB: want a multiple of %d MiB (the unit of its node capacity)", k.label, s.MemoryMiB, k.memoryUnitMiB)
	}
	return nil
}
