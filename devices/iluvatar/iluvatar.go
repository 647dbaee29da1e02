// Package iluvatar is the Iluvatar CoreX vendor: one vendor per chip of
// HAMi's iluvatars list (MR-V100, MR-V50, BI-V150, BI-V100), each with its
// own resources and annotation keys named after its commonWord.
package iluvatar

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// Config is one entry of HAMi's iluvatars list, carried in
// devices.Config.Vendor.
type Config struct {
	CommonWord         string
	ChipName           string
	ResourceCountName  string
	ResourceMemoryName string
	ResourceCoreName   string
}

// DefaultConfigs are the chart's iluvatars entries.
func DefaultConfigs() []Config {
	var out []Config
	for _, cw := range []string{"MR-V100", "MR-V50", "BI-V150", "BI-V100"} {
		out = append(out, Config{
			CommonWord: cw, ChipName: cw,
			ResourceCountName:  "iluvatar.ai/" + cw + "-vgpu",
			ResourceMemoryName: "iluvatar.ai/" + cw + ".vMem",
			ResourceCoreName:   "iluvatar.ai/" + cw + ".vCore",
		})
	}
	return out
}

// Annotation keys of a chip.
func RegisterAnnotation(cw string) string   { return "hami.io/node-" + cw + "-register" }
func HandshakeAnnotation(cw string) string  { return "hami.io/node-handshake-" + cw }
func ToAllocateAnnotation(cw string) string { return "hami.io/" + cw + "-devices-to-allocate" }
func AllocatedAnnotation(cw string) string  { return "hami.io/" + cw + "-devices-allocated" }
func UseUUIDAnnotation(cw string) string    { return "hami.io/use-" + cw + "-uuid" }
func AvoidUUIDAnnotation(cw string) string  { return "hami.io/no-use-" + cw + "-uuid" }

// ContainerNameEnv is the env the webhook adds with the container's name
// (misspelt by HAMi on purpose: the device plugin reads this name).
const ContainerNameEnv = "SOL_CONTINER_NAME"

// MemoryUnitMiB is the size of one unit of the memory resource.
const MemoryUnitMiB = 256

// Vendor implements devices.Vendor for one Iluvatar chip.
type Vendor struct {
	cfg   Config
	names devices.ResourceNames
}

var (
	_ devices.Vendor       = &Vendor{}
	_ devices.Handshaker   = &Vendor{}
	_ devices.MemoryScaler = &Vendor{}
)

// New returns the vendor of one chip, configured by the Config in
// c.Vendor; the shared fields must be empty.
func New(c devices.Config) (*Vendor, error) {
	cfg, ok := c.Vendor.(Config)
	if !ok {
		return nil, fmt.Errorf("vendor %s: an Iluvatar chip is configured by an iluvatars entry of the device config file (deviceConfigFile), not by name alone", c.Name)
	}
	shared := c
	shared.Name, shared.Vendor = "", nil
	if shared.ResourceCountName != "" || shared.ResourceMemoryName != "" || shared.ResourceCoresName != "" ||
		shared.ResourceMemoryPercentageName != "" || shared.ResourcePriorityName != "" || shared.DefaultMemoryMiB != 0 ||
		shared.DefaultCores != 0 || shared.DefaultCount != nil || shared.MemoryFactor != 0 || shared.RuntimeClassName != "" ||
		shared.OverwriteEnv || shared.CorePolicy != "" || len(shared.MIGProfiles) > 0 || shared.NodeDefaults != (devices.NodeDefaults{}) {
		return nil, fmt.Errorf("vendor %s %s: set the chip's resources in its iluvatars entry", c.Name, cfg.CommonWord)
	}
	switch {
	case cfg.CommonWord == "" || strings.ContainsAny(cfg.CommonWord, ",:;/ "):
		return nil, fmt.Errorf("vendor %s: iluvatars entry commonWord %q is empty or not a single word", c.Name, cfg.CommonWord)
	case cfg.ResourceCountName == "":
		return nil, fmt.Errorf("vendor %s %s: resourceCountName is empty", c.Name, cfg.CommonWord)
	}
	return &Vendor{cfg: cfg, names: devices.ResourceNames{
		Count:  corev1.ResourceName(cfg.ResourceCountName),
		Memory: corev1.ResourceName(cfg.ResourceMemoryName),
		Cores:  corev1.ResourceName(cfg.ResourceCoreName),
	}}, nil
}

// Config returns the chip's settings.
func (v *Vendor) Config() Config { return v.cfg }

// Name implements devices.Vendor: the chip's commonWord.
func (v *Vendor) Name() string { return v.cfg.CommonWord }

// Resources implements devices.Vendor.
func (v *Vendor) Resources() devices.ResourceNames { return v.names }

// MemoryFactor implements devices.MemoryScaler: memory counts 256 MiB
// units, and HAMi scales the quota likewise.
func (v *Vendor) MemoryFactor() int32 { return MemoryUnitMiB }

// AssignmentAnnotations implements devices.Vendor.
func (v *Vendor) AssignmentAnnotations() (string, string) {
	return ToAllocateAnnotation(v.cfg.CommonWord), AllocatedAnnotation(v.cfg.CommonWord)
}

// HandshakeAnnotation implements devices.Handshaker.
func (v *Vendor) HandshakeAnnotation() string { return HandshakeAnnotation(v.cfg.CommonWord) }

// Inventory implements devices.Vendor: the legacy (or JSON) register
// annotation hami.io/node-<cw>-register; cards whose type lacks the
// commonWord are left out, as HAMi never offers them.
func (v *Vendor) Inventory(node *corev1.Node) ([]devices.Card, error) {
	key := RegisterAnnotation(v.cfg.CommonWord)
	raw, ok := node.Annotations[key]
	if !ok {
		return nil, nil
	}
	cards, err := devices.DecodeInventory(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	if cards = devices.KeepModel(cards, v.cfg.CommonWord); len(cards) == 0 {
		return nil, fmt.Errorf("%s: no card type contains %s", key, v.cfg.CommonWord)
	}
	if !devices.CountAllocatable(node, v.names.Count) {
		return nil, fmt.Errorf("allocatable %s is 0: the device plugin is not serving", v.names.Count)
	}
	devices.ApplyCordon(cards, node.Annotations[devices.DeviceCordon])
	return cards, nil
}

// InventoryChanged implements devices.Vendor.
func (v *Vendor) InventoryChanged(old, updated *corev1.Node) bool {
	key := RegisterAnnotation(v.cfg.CommonWord)
	return devices.RegisterChanged(old, updated, key, v.names.Count)
}

// Fit implements devices.Vendor: HAMi's standard share fit.
func (v *Vendor) Fit(cards []devices.Card, used []devices.Usage, req *devices.PodRequest) (devices.Assignment, *devices.Rejection) {
	return devices.FitPod(v.cfg.CommonWord, cards, used, req)
}

// FitsByStandardRules implements devices.StandardFitter: Fit is FitPod.
func (v *Vendor) FitsByStandardRules() {}

// ParsePod implements devices.Vendor: uuid selectors and the card policy.
func (v *Vendor) ParsePod(pod *corev1.Pod) (devices.PodRequest, error) {
	req, asked, err := devices.ParseContainers(pod, v.parseContainer)
	if err != nil || !asked {
		return req, err
	}
	if req.Preferences, err = devices.UUIDPreferences(pod.Annotations, UseUUIDAnnotation(v.cfg.CommonWord), AvoidUUIDAnnotation(v.cfg.CommonWord)); err != nil {
		return devices.PodRequest{}, err
	}
	return req, nil
}

// parseContainer: count, memory in 256 MiB units (none: whole card),
// cores in percent (none: 0, shared).
func (v *Vendor) parseContainer(c *corev1.Container) (devices.Request, error) {
	count, _, err := devices.ContainerQuantity(c, v.names.Count)
	if err != nil || count == 0 {
		return devices.Request{}, err
	}
	r := devices.Request{Count: count}
	mem, _, err := devices.ContainerQuantity(c, v.names.Memory)
	if err != nil {
		return devices.Request{}, err
	}
	if r.MemoryMiB, err = devices.ScaleMemory(v.names.Memory, mem, MemoryUnitMiB); err != nil {
		return devices.Request{}, err
	}
	if r.MemoryMiB == 0 {
		r.MemoryPercent = 100
	}
	if r.Cores, _, err = devices.ContainerQuantity(c, v.names.Cores); err != nil {
		return devices.Request{}, err
	}
	return r, nil
}

// Default implements devices.Vendor, HAMi's Iluvatar webhook: a container
// with the count in its limits asks for the chip; a count above 1 sets the
// core limit to count x 100 (whole cards); the container gets
// SOL_CONTINER_NAME=<its name> unless it has that env or no name.
func (v *Vendor) Default(c *corev1.Container) (bool, error) {
	q, ok := c.Resources.Limits[v.names.Count]
	if !ok {
		return false, nil
	}
	if _, err := v.parseContainer(c); err != nil {
		return false, err
	}
	if n := q.Value(); n > 1 && v.names.Cores != "" {
		c.Resources.Limits[v.names.Cores] = *resource.NewQuantity(n*100, resource.DecimalSI)
	}
	if c.Name == "" {
		return true, nil
	}
	for _, e := range c.Env {
		if e.Name == ContainerNameEnv {
			return true, nil
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: ContainerNameEnv, Value: c.Name})
	return true, nil
}
