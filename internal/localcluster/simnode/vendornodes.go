package simnode

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/amd"
	"github.com/hami-scheduler/hami-scheduler/devices/ascend"
	"github.com/hami-scheduler/hami-scheduler/devices/awsneuron"
	"github.com/hami-scheduler/hami-scheduler/devices/biren"
	"github.com/hami-scheduler/hami-scheduler/devices/cambricon"
	"github.com/hami-scheduler/hami-scheduler/devices/enflame"
	"github.com/hami-scheduler/hami-scheduler/devices/hygon"
	"github.com/hami-scheduler/hami-scheduler/devices/iluvatar"
	"github.com/hami-scheduler/hami-scheduler/devices/kunlun"
	"github.com/hami-scheduler/hami-scheduler/devices/metax"
	"github.com/hami-scheduler/hami-scheduler/devices/mthreads"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/devices/vastai"
)

// What each vendor's device plugin (and the kubelet, for capacity) puts on
// its Node, per hami-vendors.md; the register values are built in the
// formats the devices packages decode, and TestVendorNodesDecode decodes
// every one with the vendor's own package.

// advertise sets a resource's capacity and allocatable.
func advertise(n *corev1.Node, name corev1.ResourceName, v int64) {
	q := *resource.NewQuantity(v, resource.DecimalSI)
	n.Status.Capacity[name] = q
	n.Status.Allocatable[name] = q.DeepCopy()
}

// numaOf puts the first half of a node's cards on NUMA node 0, the rest
// on 1.
func numaOf(i, cards int) int {
	if cards > 1 {
		return i * 2 / cards
	}
	return 0
}

// cardID is a stable card id of a vendor's shape: prefix and 12 hex
// digits derived from the node and the card's index.
func cardID(prefix, node string, i int) string {
	u := CardUUID(node, i)
	return prefix + strings.ReplaceAll(u[len(u)-12:], "-", "")
}

// registerJSON is the JSON register value of a vendor whose plugin writes
// HAMi's device.DeviceInfo list; custom, when set, gives each card's
// custominfo.
func registerJSON(node string, s Spec, idPrefix, cardType string, cores int32, custom func(i int) map[string]any) string {
	cards := make([]registeredCard, s.Cards)
	for i := range cards {
		cards[i] = registeredCard{
			ID: cardID(idPrefix, node, i), Index: uint(i), Count: s.Split, Devmem: s.MemoryMiB, Devcore: cores,
			Type: cardType, Numa: numaOf(i, s.Cards), Health: true,
		}
		if custom != nil {
			cards[i].CustomInfo = custom(i)
		}
	}
	data, _ := json.Marshal(cards)
	return string(data)
}

// registerLegacy is the legacy register value
// ("id,count,devmem,devcore,type,numa,health,index,mode:" per card) that
// the Hygon and Iluvatar plugins write.
func registerLegacy(node string, s Spec, idPrefix, cardType string) string {
	var b strings.Builder
	for i := range s.Cards {
		fmt.Fprintf(&b, "%s,%d,%d,%d,%s,%d,true,%d,%s:", cardID(idPrefix, node, i), s.Split, s.MemoryMiB, s.Cores, cardType, numaOf(i, s.Cards), i, devices.DefaultMode)
	}
	return b.String()
}

// typeNaming is the model as a card type containing word: as written
// when it does (case-insensitively), else word-first; spaces become
// dashes where the format cannot hold them.
func typeNaming(model, word string, dashes bool) string {
	t := model
	if !strings.Contains(strings.ToUpper(t), strings.ToUpper(word)) {
		t = word + " " + t
	}
	if dashes {
		t = strings.Join(strings.Fields(t), "-")
	}
	return t
}

func nvidiaInventory(n *corev1.Node, s Spec) {
	n.Annotations[nvidia.RegisterAnnotation] = RegisterAnnotation(n.Name, s)
	advertise(n, nvidia.DefaultCountName, int64(s.Cards)*int64(s.Split))
}

// capacityInventory is a vendor whose cards HAMi synthesises from one
// count resource: cards x perCard of it.
func capacityInventory(name corev1.ResourceName, perCard int64) func(*corev1.Node, Spec) {
	return func(n *corev1.Node, s Spec) { advertise(n, name, int64(s.Cards)*perCard) }
}

// metaxGPUInventory: whole GPUs from the count capacity, and the topology
// maps MetaX's plugin writes, from a pod's card count to its loss (read
// under node binpack) and score (spread). Simulated topology: the node's
// cards form two MetaLink halves; a pod within one half loses nothing,
// one across the halves 100.
func metaxGPUInventory(n *corev1.Node, s Spec) {
	advertise(n, metax.DefaultGPUCountName, int64(s.Cards))
	costs := map[string]int{}
	for cards := 1; cards <= s.Cards; cards++ {
		costs[strconv.Itoa(cards)] = 0
		if cards > max(1, s.Cards/2) {
			costs[strconv.Itoa(cards)] = 100
		}
	}
	data, _ := json.Marshal(costs)
	n.Annotations[metax.LossAnnotation] = string(data)
	n.Annotations[metax.ScoreAnnotation] = string(data)
}

// ascendChip is the chart's Ascend chip whose common word the model
// names (spaces ignored), the longest such.
func ascendChip(model string) (ascend.Config, error) {
	flat := strings.ToUpper(strings.Join(strings.Fields(model), ""))
	var best ascend.Config
	var known []string
	for _, c := range ascend.DefaultConfigs() {
		known = append(known, c.CommonWord)
		if strings.Contains(flat, strings.ToUpper(c.CommonWord)) && len(c.CommonWord) > len(best.CommonWord) {
			best = c
		}
	}
	if best.CommonWord == "" {
		return best, fmt.Errorf("Ascend model %q names no chip of HAMi's chart (%s)", model, strings.Join(known, ", "))
	}
	return best, nil
}

func ascendInventory(n *corev1.Node, s Spec) {
	chip, _ := ascendChip(s.Model)
	n.Annotations[ascend.RegisterAnnotation(chip.CommonWord)] = registerJSON(n.Name, s, "npu-", chip.CommonWord, chip.AICore, nil)
	if s.HAMiCore {
		n.Annotations[ascend.NodeHAMiCoreAnnotation] = "true"
	}
	advertise(n, corev1.ResourceName(chip.ResourceName), int64(s.Cards)*int64(s.Split))
}

// ascendPlugins are the device plugins of HAMi's chart chips, one each.
func ascendPlugins() []plugin {
	var out []plugin
	for _, c := range ascend.DefaultConfigs() {
		out = append(out, endpoints(&ascendPlugin{chip: c.CommonWord}, corev1.ResourceName(c.ResourceName))...)
	}
	return out
}

// iluvatarChip is the chart's Iluvatar chip the model names.
func iluvatarChip(model string) (iluvatar.Config, error) {
	upper := strings.ToUpper(model)
	var known []string
	for _, c := range iluvatar.DefaultConfigs() {
		known = append(known, c.CommonWord)
		if strings.Contains(upper, c.CommonWord) {
			return c, nil
		}
	}
	return iluvatar.Config{}, fmt.Errorf("Iluvatar model %q names no chip of HAMi's chart (%s)", model, strings.Join(known, ", "))
}

func iluvatarInventory(n *corev1.Node, s Spec) {
	chip, _ := iluvatarChip(s.Model)
	n.Annotations[iluvatar.RegisterAnnotation(chip.CommonWord)] = registerLegacy(n.Name, s, "GPU-", chip.CommonWord)
	advertise(n, corev1.ResourceName(chip.ResourceCountName), int64(s.Cards)*int64(s.Split))
}

// iluvatarPlugins are the device plugins of HAMi's chart chips, one each.
func iluvatarPlugins() []plugin {
	var out []plugin
	for _, c := range iluvatar.DefaultConfigs() {
		out = append(out, endpoints(&hamiPlugin{
			toAllocate: iluvatar.ToAllocateAnnotation(c.CommonWord), word: c.CommonWord,
			allocated: iluvatar.AllocatedAnnotation(c.CommonWord), lock: devices.NodeLock,
		}, corev1.ResourceName(c.ResourceCountName))...)
	}
	return out
}

func hygonInventory(n *corev1.Node, s Spec) {
	model := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(s.Model, "Hygon"), "hygon"))
	n.Annotations[hygon.RegisterAnnotation] = registerLegacy(n.Name, s, "DCU-", typeNaming(model, hygon.VendorWord, true))
	advertise(n, hygon.DefaultCountName, int64(s.Cards)*int64(s.Split))
}

// cambriconInventory: what Cambricon's plugin registers in dynamic-smlu
// mode, from which HAMi synthesises the cards: vcore (100 a card), vmemory
// (in 256 MiB units: the plugin run with --min-dsmlu-unit=256, the only
// unit HAMi's arithmetic agrees with) and real-mlu-counts (one a card).
// cambricon.com/vmlu, HAMi's count, is registered by nobody.
func cambriconInventory(n *corev1.Node, s Spec) {
	advertise(n, cambricon.DefaultCoresName, int64(s.Cards)*100)
	advertise(n, cambricon.DefaultMemoryName, int64(s.Cards)*int64(s.MemoryMiB/cambricon.MemoryUnitMiB))
	advertise(n, cambriconRealCountsName, int64(s.Cards))
}

// sgpuDevice is one entry of MetaX's metax-tech.com/node-gpu-devices.
type sgpuDevice struct {
	UUID              string `json:"uuid"`
	BDF               string `json:"bdf"`
	Model             string `json:"model"`
	TotalDevCount     int32  `json:"totalDevCount"`
	TotalCompute      int32  `json:"totalCompute"`
	TotalVRam         int32  `json:"totalVRam"`
	AvailableDevCount int32  `json:"availableDevCount"`
	AvailableCompute  int32  `json:"availableCompute"`
	AvailableVRam     int32  `json:"availableVRam"`
	Numa              int    `json:"numa"`
	Healthy           bool   `json:"healthy"`
	QosPolicy         string `json:"qosPolicy"`
	LinkZone          int32  `json:"linkZone"`
}

func metaxSGPUInventory(n *corev1.Node, s Spec) {
	list := make([]sgpuDevice, s.Cards)
	for i := range list {
		list[i] = sgpuDevice{
			UUID: cardID("GPU-", n.Name, i), BDF: fmt.Sprintf("0000:%02x:00.0", i+1), Model: strings.Fields(s.Model)[len(strings.Fields(s.Model))-1],
			TotalDevCount: s.Split, TotalCompute: 100, TotalVRam: s.MemoryMiB,
			AvailableDevCount: s.Split, AvailableCompute: 100, AvailableVRam: s.MemoryMiB,
			Numa: numaOf(i, s.Cards), Healthy: true, QosPolicy: metax.BestEffort, LinkZone: int32(numaOf(i, s.Cards) + 1),
		}
	}
	data, _ := json.Marshal(list)
	n.Annotations[metax.SGPURegisterAnnotation] = string(data)
	advertise(n, metax.DefaultSGPUCountName, int64(s.Cards)*int64(s.Split))
}

func kunlunVXPUInventory(n *corev1.Node, s Spec) {
	n.Annotations[kunlun.VXPURegisterAnnotation] = registerJSON(n.Name, s, "xpu-", typeNaming(s.Model, kunlun.VXPUWord, false), 100, nil)
	advertise(n, kunlun.DefaultVXPUCountName, int64(s.Cards)*int64(s.Split))
}

// mthreadsInventory: the cards come from the sgpu capacities (16 cores a
// GPU, memory in 512 MiB units), the count from vgpu.
func mthreadsInventory(n *corev1.Node, s Spec) {
	advertise(n, mthreads.DefaultCoresName, int64(s.Cards)*mthreads.CoresPerGPU)
	advertise(n, mthreads.DefaultMemoryName, int64(s.Cards)*int64(s.MemoryMiB/mthreads.MemoryUnitMiB))
	advertise(n, mthreads.DefaultCountName, int64(s.Cards)*int64(s.Split))
}

// neuronInventory: devices and NeuronCores (split per device), and the
// instance type HAMi reads for the multi-device rule.
func neuronInventory(n *corev1.Node, s Spec) {
	advertise(n, awsneuron.DefaultCountName, int64(s.Cards))
	advertise(n, awsneuron.DefaultCoresName, int64(s.Cards)*int64(s.Split))
	instance := "trn1.32xlarge"
	if strings.Contains(strings.ToLower(s.Model), "inf") {
		instance = "inf2.48xlarge"
	}
	n.Labels[awsneuron.InstanceTypeLabel] = instance
}

func checkNeuron(s Spec) error {
	if s.Split > 30 {
		return fmt.Errorf("AWS Neuron split %d: the split is NeuronCores per device, at most 30", s.Split)
	}
	return nil
}

func amdInventory(n *corev1.Node, s Spec) {
	n.Annotations[amd.RegisterAnnotation] = registerJSON(n.Name, s, "GPU-", typeNaming(s.Model, amd.VendorWord, false), s.Cores, nil)
	advertise(n, amd.DefaultCountName, int64(s.Cards)*int64(s.Split))
}

// drsCapacity is Enflame's enflame.com/gcu-drs-capacity.
type drsCapacity struct {
	Devices []drsDevice `json:"devices"`
	// Profiles map a profile name "<slices>g.<GB>gb" to its id.
	Profiles map[string]string `json:"profiles"`
}

type drsDevice struct {
	Index    string `json:"index"`
	Minor    string `json:"minor"`
	Capacity int32  `json:"capacity"`
}

// drsProfiles are a card's profiles: 1 slice, half the slices and all of
// them, memory in proportion (6 slices of 40 GB: 1g.6gb, 3g.20gb,
// 6g.40gb).
func drsProfiles(slices, gb int32) map[string]string {
	out := map[string]string{}
	for _, sl := range []int32{1, slices / 2, slices} {
		if sl < 1 {
			continue
		}
		name := fmt.Sprintf("%dg.%dgb", sl, gb*sl/slices)
		if _, dup := out[name]; !dup {
			out[name] = strconv.Itoa(len(out))
		}
	}
	return out
}

func drsInventory(n *corev1.Node, s Spec) {
	c := drsCapacity{Profiles: drsProfiles(s.Split, s.MemoryMiB/1024)}
	for i := range s.Cards {
		c.Devices = append(c.Devices, drsDevice{Index: strconv.Itoa(i), Minor: strconv.Itoa(i), Capacity: s.Split})
	}
	data, _ := json.Marshal(c)
	n.Annotations[enflame.DRSCapacityAnnotation] = string(data)
	advertise(n, enflame.DefaultDRSName, int64(s.Cards)*int64(s.Split))
}

func checkDRS(s Spec) error {
	if s.MemoryMiB/1024 < s.Split {
		return fmt.Errorf("Enflame DRS: %d GiB cannot be cut into %d slices of at least 1 GB", s.MemoryMiB/1024, s.Split)
	}
	return nil
}

func vastaiInventory(n *corev1.Node, s Spec) {
	n.Annotations[vastai.RegisterAnnotation] = registerJSON(n.Name, s, "va-", typeNaming(s.Model, vastai.VendorWord, false), 100,
		func(i int) map[string]any { return map[string]any{"DeviceStrategy": "card", "AIC": strconv.Itoa(i)} })
	advertise(n, vastai.DefaultCountName, int64(s.Cards)*int64(s.Split))
}

// birenInventory is what Biren's plugin registers in runc mode (since
// 2026-05): cards card_<i>, the driver's GPU name as the type (the model
// without the vendor word, e.g. BR104), memory, no devcore.
func birenInventory(n *corev1.Node, s Spec) {
	name := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(s.Model, "Biren"), "biren"))
	if name == "" {
		name = s.Model
	}
	cards := make([]registeredCard, s.Cards)
	for i := range cards {
		cards[i] = registeredCard{ID: "card_" + strconv.Itoa(i), Index: uint(i), Count: s.Split, Devmem: s.MemoryMiB, Type: name, Health: true}
	}
	data, _ := json.Marshal(cards)
	n.Annotations[biren.RegisterAnnotation] = string(data)
	advertise(n, biren.DefaultCountName, int64(s.Cards)*int64(s.Split))
}
