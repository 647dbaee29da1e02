// Package simnode simulates GPU nodes for tests, benchmarks and hami-local:
// Node objects whose annotations, capacity and allocatable are what HAMi's
// device plugins (NVIDIA's and every other vendor's HAMi supports) and the
// kubelet would write, and an Agent that plays the device plugins' Allocate
// and the kubelet for pods bound to them. Each vendor is one entry of a
// table (kinds.go).
package simnode

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Spec describes a group of identical simulated GPU nodes.
type Spec struct {
	// Nodes is the number of nodes.
	Nodes int
	// Cards is the number of cards per node.
	Cards int
	// Model is the card's NVML name, e.g. "NVIDIA A100-SXM4-40GB" or
	// "Tesla T4", or another vendor's model, e.g. "Ascend910B4" (see
	// ParseSpec for the words that pick a vendor).
	Model string
	// Vendor is the vendor's config name (devices/vendors), e.g. "ascend"
	// or "hygon"; empty for NVIDIA. ParseSpec sets it from the model.
	Vendor string
	// MemoryMiB is each card's memory as registered.
	MemoryMiB int32
	// Split is how many containers may share a card (HAMi's
	// deviceSplitCount; default 10), the count each card registers; for
	// AWS Neuron the NeuronCores per device.
	Split int32
	// Cores is each card's core capacity (100 = one card; HAMi's
	// deviceCoreScaling x 100); for AMD the compute units.
	Cores int32
	// MIG puts the node's device plugin in mig mode (operatingmode: mig):
	// every card registers the MIG profiles the chart's allowlist grants
	// its model (see MIGProfiles), its count is the largest instance count
	// among them, its devcore 100. ParseSpec refuses a model without MIG
	// facts.
	MIG bool
	// HAMiCore marks Ascend nodes that support the hami-core soft split
	// (node annotation hami-vnpu-core: "true"); without it the nodes carry
	// no such annotation and the scheduler's hamiVnpuCore setting decides.
	HAMiCore bool
	// DRA, when set, is the DRA driver the nodes run instead of the
	// vendor's HAMi device plugin (HAMiDRADriver, NVIDIADRADriver,
	// HygonDRADriver, AscendDRADriver): no HAMi annotations and no device
	// plugin resources on the Node; the agent publishes the driver's
	// ResourceSlices and plays its kubelet plugin. ParseSpec sets it from
	// the setting "dra" (the vendor's first model) or "dra <word>".
	DRA string
}

// EveryVendorSpec is a small mixed cluster: one node of every vendor HAMi
// supports. docs/local-cluster.md and examples/vendors use it; the e2e
// tests run the examples on it.
const EveryVendorSpec = "1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB; " +
	"1 node x 4 cards of Ascend910B4 32 GiB; " +
	"1 node x 2 cards of Hygon DCU Z100 32 GiB; " +
	"1 node x 2 cards of Cambricon MLU370 24 GiB; " +
	"1 node x 2 cards of MetaX C500 64 GiB; " +
	"1 node x 2 cards of MetaX sGPU C500 64 GiB; " +
	"1 node x 2 cards of Iluvatar BI-V150 32 GiB; " +
	"1 node x 8 cards of Kunlun P800 XPU 96 GiB; " +
	"1 node x 8 cards of Kunlun vXPU P800 96 GiB; " +
	"1 node x 2 cards of Moore Threads MTT S4000 48 GiB; " +
	"1 node x 2 cards of AWS Neuron Trainium 32 GiB; " +
	"1 node x 2 cards of AMD Instinct MI300X 192 GiB, cores 304; " +
	"1 node x 2 cards of Enflame GCU S60 48 GiB; " +
	"1 node x 2 cards of Enflame DRS S60 40 GiB; " +
	"1 node x 2 cards of Vastai VA1 16 GiB; " +
	"1 node x 2 cards of Biren BR104 32 GiB"

// DefaultSplit is HAMi's default deviceSplitCount.
const DefaultSplit = 10

// Limits keep a mistyped spec from creating a cluster the machine cannot hold.
const (
	maxNodes = 100000
	maxCards = 128
)

var specPattern = regexp.MustCompile(`(?i)^(\d+)\s*nodes?\s*[x×*]\s*(\d+)\s*cards?\s+of\s+(.+?)\s+(\d+(?:\.\d+)?)\s*(gib|gb|g|mib|mb|m)\s*(?:,(.*))?$`)

// ParseSpecs reads one or more node groups separated by ";", each like
// "4 nodes x 8 cards of NVIDIA A100 40 GiB, split 10". After the memory
// come optional comma-separated settings: "split N" (default 10),
// "cores N" (default 100) and "mig" (the device plugin in mig mode, e.g.
// "1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB, mig") and "dra" (the
// nodes run a DRA driver instead of HAMi's device plugin, e.g.
// "2 nodes x 4 cards of NVIDIA A100-SXM4-40GB 40 GiB, dra"; see ParseSpec).
// Groups of different vendors and kinds mix, e.g.
// "2 nodes x 8 cards of Ascend910B4 32 GiB; 1 node x 4 cards of Hygon DCU Z100 32 GiB".
func ParseSpecs(s string) ([]Spec, error) {
	var specs []Spec
	for part := range strings.SplitSeq(s, ";") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		spec, err := ParseSpec(part)
		if err != nil {
			return nil, err
		}
		specs = append(specs, spec)
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("no node group in %q", s)
	}
	return specs, nil
}

// ParseSpec reads one node group, e.g.
// "4 nodes x 8 cards of NVIDIA A100 40 GiB, split 10, cores 100".
//
// The model's words (case-insensitive, first match in this order) pick the
// vendor, whose device plugin the nodes then simulate:
//
//   - Huawei Ascend: "ascend"; the model must name a chip of HAMi's chart
//     (Ascend910A, Ascend910B2, Ascend910B3, Ascend910B4, Ascend910B4-1,
//     Ascend310P, Ascend910C), e.g. "Ascend910B4 32 GiB"; split default 4,
//     devcore the chip's AI cores; the setting "hami-core" marks the
//     nodes as supporting the hami-core soft split.
//   - Iluvatar: "iluvatar", "bi-v1", "mr-v"; the model must name a chart
//     chip (MR-V100, MR-V50, BI-V150, BI-V100); split default 10.
//   - Hygon DCU: "hygon", "dcu"; split default 4.
//   - Cambricon MLU: "cambricon", "mlu"; memory a multiple of 256 MiB;
//     count fixed at 100 (HAMi synthesises the cards from capacity).
//   - MetaX sGPU: "sgpu" (e.g. "MetaX sGPU C500"); split default 16.
//   - MetaX GPU: "metax"; whole cards of 64 GiB (the memory must say so),
//     topology maps of two MetaLink halves.
//   - Kunlunxin vXPU: "vxpu"; split default 4.
//   - Kunlunxin XPU: "kunlun", "xpu"; whole cards of 96 GiB.
//   - Moore Threads: "moore threads", "mthreads", "mtt"; memory a multiple
//     of 512 MiB; count fixed at 100.
//   - AWS Neuron: "neuron", "inferentia", "trainium"; split is the
//     NeuronCores per device (default 2); no memory is registered;
//     "inferentia"/"inf" models get an inf2 instance type, others trn1.
//   - AMD: "amd", "instinct"; split default 4; cores are compute units.
//   - Enflame DRS GCU: "drs"; split is the slices per card (default 6),
//     memory whole GiB; profiles 1 slice, half and all of them.
//   - Enflame GCU: "enflame", "gcu"; whole cards, no memory registered.
//   - Vastai: "vastai"; split default 1.
//   - Biren: "biren"; split default 1.
//   - NVIDIA: any other model.
//
// "mig" is NVIDIA's only, "hami-core" Ascend's; a vendor whose count HAMi
// fixes refuses "split".
//
// "dra" makes the group DRA nodes: they run a DRA driver instead of the
// vendor's HAMi device plugin (Spec.DRA). NVIDIA: "dra" or "dra hami" is
// HAMi's driver (hami-core-gpu.project-hami.io), "dra nvidia" NVIDIA's
// (gpu.nvidia.com, memory shares); Hygon DCU: "dra" or "dra hygon"
// (dra.hygon.com, "cores" sets the compute units it publishes); Ascend:
// "dra" or "dra ascend" (ascend.project-hami.io). A DRA group takes no
// split, mig or hami-core, nor cores but Hygon's (DRAModels lists the
// drivers and the sources they follow).
func ParseSpec(s string) (Spec, error) {
	m := specPattern.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return Spec{}, fmt.Errorf("node group %q: want \"<n> nodes x <c> cards of <model> <memory> GiB[, split <s>][, cores <k>]\"", strings.TrimSpace(s))
	}
	spec := Spec{Model: strings.TrimSpace(m[3]), Split: DefaultSplit, Cores: 100}
	if spec.Model == "" {
		return Spec{}, fmt.Errorf("node group %q: the card model is empty", strings.TrimSpace(s))
	}
	k := kindOfModel(spec.Model)
	if k != nvidiaKind {
		spec.Vendor = k.vendor
		spec.Split = max(k.defaultSplit, k.fixedSplit)
	}
	var err error
	if spec.Nodes, err = boundedInt(m[1], "node count", 1, maxNodes); err != nil {
		return Spec{}, fmt.Errorf("node group %q: %w", s, err)
	}
	if spec.Cards, err = boundedInt(m[2], "card count", 1, maxCards); err != nil {
		return Spec{}, fmt.Errorf("node group %q: %w", s, err)
	}
	if spec.MemoryMiB, err = memoryMiB(m[4], m[5]); err != nil {
		return Spec{}, fmt.Errorf("node group %q: %w", s, err)
	}
	// draWord is nil without "dra", else the word after it ("" for none).
	var draWord *string
	if m[6] != "" {
		for opt := range strings.SplitSeq(m[6], ",") {
			opt = strings.TrimSpace(opt)
			if key, value, _ := strings.Cut(opt, " "); strings.EqualFold(key, "dra") {
				if draWord != nil {
					return Spec{}, fmt.Errorf("node group %q: setting %q: dra given twice", s, opt)
				}
				draWord = ptrTo(strings.TrimSpace(value))
				continue
			}
			if err := spec.setOption(opt); err != nil {
				return Spec{}, fmt.Errorf("node group %q: %w", s, err)
			}
		}
	}
	if err := spec.checkVendor(k); err != nil {
		return Spec{}, fmt.Errorf("node group %q: %w", s, err)
	}
	if err := spec.setDRA(k, draWord); err != nil {
		return Spec{}, fmt.Errorf("node group %q: %w", s, err)
	}
	if spec.MIG {
		profiles, err := MIGProfiles(spec.Model, nil)
		if err != nil {
			return Spec{}, fmt.Errorf("node group %q: %w", s, err)
		}
		spec.Split, spec.Cores = largestInstanceCount(profiles), 100
	}
	return spec, nil
}

// checkVendor applies the vendor's rules to a parsed spec.
func (s *Spec) checkVendor(k *kind) error {
	if k == nvidiaKind {
		if s.HAMiCore {
			return fmt.Errorf("hami-core: only Ascend nodes have the setting (%s is NVIDIA)", s.Model)
		}
		return nil
	}
	if s.MIG {
		return fmt.Errorf("mig: only NVIDIA cards have MIG (%s is %s)", s.Model, k.label)
	}
	if s.HAMiCore && k.vendor != "ascend" {
		return fmt.Errorf("hami-core: only Ascend nodes have the setting (%s is %s)", s.Model, k.label)
	}
	if strings.ContainsAny(s.Model, ",:;") {
		return fmt.Errorf("%s model %q: card types cannot hold , : or ; (register and assignment separators)", k.label, s.Model)
	}
	if k.fixedSplit > 0 && s.Split != k.fixedSplit {
		return fmt.Errorf("split %d: %s cards always register %d (HAMi synthesises them)", s.Split, k.label, k.fixedSplit)
	}
	if err := k.checkMemory(*s); err != nil {
		return err
	}
	if k.check != nil {
		return k.check(*s)
	}
	return nil
}

func (s *Spec) setOption(opt string) error {
	key, value, _ := strings.Cut(opt, " ")
	value = strings.TrimSpace(value)
	switch strings.ToLower(key) {
	case "split":
		n, err := boundedInt(value, "split", 1, 1000)
		s.Split = int32(n)
		return err
	case "cores":
		n, err := boundedInt(value, "cores", 1, 10000)
		s.Cores = int32(n)
		return err
	case "mig":
		if value != "" {
			return fmt.Errorf("setting %q: mig takes no value", opt)
		}
		s.MIG = true
		return nil
	case "hami-core":
		if value != "" {
			return fmt.Errorf("setting %q: hami-core takes no value", opt)
		}
		s.HAMiCore = true
		return nil
	default:
		return fmt.Errorf("unknown setting %q (want split N, cores N, mig, hami-core or dra [driver])", opt)
	}
}

func boundedInt(s, what string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s %q: want a whole number from %d to %d", what, s, lo, hi)
	}
	return n, nil
}

func memoryMiB(number, unit string) (int32, error) {
	v, err := strconv.ParseFloat(number, 64)
	if err != nil {
		return 0, fmt.Errorf("memory %q is not a number", number)
	}
	switch strings.ToLower(unit) {
	case "gib", "gb", "g":
		v *= 1024
	}
	if v < 1 || v > 1<<31-1 {
		return 0, fmt.Errorf("memory %s %s: want 1 MiB to 2 PiB", number, unit)
	}
	return int32(v), nil
}

// String renders the spec in the form ParseSpec reads.
func (s Spec) String() string {
	nodes, cards := "nodes", "cards"
	if s.Nodes == 1 {
		nodes = "node"
	}
	if s.Cards == 1 {
		cards = "card"
	}
	mem := strconv.FormatInt(int64(s.MemoryMiB), 10) + " MiB"
	if s.MemoryMiB%1024 == 0 {
		mem = strconv.FormatInt(int64(s.MemoryMiB/1024), 10) + " GiB"
	}
	if m := draModelOf(s); m != nil {
		// A DRA node has no split; only Hygon's driver publishes cores.
		out := fmt.Sprintf("%d %s x %d %s of %s %s", s.Nodes, nodes, s.Cards, cards, s.Model, mem)
		if s.Cores != 100 {
			out += fmt.Sprintf(", cores %d", s.Cores)
		}
		if m.isDefault() {
			return out + ", dra"
		}
		return out + ", dra " + m.words[0]
	}
	if s.MIG {
		// The split and cores follow from the model's MIG profiles.
		return fmt.Sprintf("%d %s x %d %s of %s %s, mig", s.Nodes, nodes, s.Cards, cards, s.Model, mem)
	}
	out := fmt.Sprintf("%d %s x %d %s of %s %s, split %d", s.Nodes, nodes, s.Cards, cards, s.Model, mem, s.Split)
	if s.Cores != 100 {
		out += fmt.Sprintf(", cores %d", s.Cores)
	}
	if s.HAMiCore {
		out += ", hami-core"
	}
	return out
}

// setDRA applies "dra [word]" (word nil: none given) to a parsed spec of
// kind k: it picks the driver, and refuses the settings a DRA node does
// not have.
func (s *Spec) setDRA(k *kind, word *string) error {
	if word == nil {
		return nil
	}
	m, err := draModelFor(k, *word)
	if err != nil {
		return err
	}
	switch {
	case s.MIG:
		return fmt.Errorf("mig: %s publishes full cards, not MIG devices", m.label)
	case s.HAMiCore:
		return fmt.Errorf("hami-core: the setting is HAMi's Ascend device plugin's, not %s's", m.label)
	case s.Split != max(k.defaultSplit, k.fixedSplit):
		return fmt.Errorf("split %d: %s shares a card by its capacity, it has no split count", s.Split, m.label)
	case s.Cores != 100 && m != hygonDRAModel:
		return fmt.Errorf("cores %d: %s publishes its own cores (only Hygon's DRA driver takes the card's compute units)", s.Cores, m.label)
	}
	s.DRA = m.driver
	return nil
}
