// Package dra maps the devices DRA drivers publish (ResourceSlices,
// resource.k8s.io/v1) onto HAMi's cards, their allocations onto HAMi's
// usage, and HAMi's assignments onto ResourceClaims, for the drivers that
// share a card by consumable capacity (allowMultipleAllocations). Pure
// functions: API objects in, cards, usage and claims out.
package dra

import (
	"strings"

	resourceapi "k8s.io/api/resource/v1"
)

// Driver is one DRA driver's model of a shareable card: which of its
// devices are cards, and the capacities that hold a card's memory and
// cores.
type Driver struct {
	// Name is the driver's name in its ResourceSlices and allocations.
	Name string
	// DeviceClass is the class the driver's chart installs, which a
	// claim's requests name.
	DeviceClass string
	// Vendor is the HAMi vendor whose requests the cards take (its name in
	// the registry, e.g. NVIDIA).
	Vendor string
	// Type is the value of the device attribute "type" that marks a card.
	Type string
	// Memory is the capacity holding a card's memory, in bytes.
	Memory resourceapi.QualifiedName
	// Cores is the capacity holding a card's compute, in percent of the
	// card; "" when the driver shares memory only.
	Cores resourceapi.QualifiedName
	// Index is the integer attribute holding the card's index; "" when
	// the driver publishes none (the index is then read from the device
	// name's last number).
	Index resourceapi.QualifiedName
	// NUMA is the integer attribute holding the card's NUMA node; "" for
	// none.
	NUMA resourceapi.QualifiedName
}

// HAMiCore is HAMi's DRA driver for NVIDIA cards (Project-HAMi/k8s-dra-driver,
// cmd/hami-kubelet-plugin, commit ebeaad9): one device "hami-gpu-<minor>"
// per card, attributes type=hami-gpu, uuid, minor, productName, capacities
// cores (percent, 0..100) and memory (bytes), allowMultipleAllocations;
// DeviceClass hami-core-gpu.project-hami.io (HAMi-DRA's chart). HAMi-core
// in the container enforces the consumed memory and cores.
var HAMiCore = Driver{
	Name:        "hami-core-gpu.project-hami.io",
	DeviceClass: "hami-core-gpu.project-hami.io",
	Vendor:      "NVIDIA",
	Type:        "hami-gpu",
	Memory:      "memory",
	Cores:       "cores",
	Index:       "minor",
}

// NVIDIAGPU is NVIDIA's DRA driver (kubernetes-sigs/dra-driver-nvidia-gpu,
// cmd/gpu-kubelet-plugin, commit 9593204) with its ConsumableShares
// feature in "memory" mode: one device "gpu-<minor>" per card, attributes
// type=gpu, uuid, productName, capacity memory (bytes, step 1Mi),
// allowMultipleAllocations; DeviceClass gpu.nvidia.com. It shares a card
// by memory only: a request's cores are not enforced.
var NVIDIAGPU = Driver{
	Name:        "gpu.nvidia.com",
	DeviceClass: "gpu.nvidia.com",
	Vendor:      "NVIDIA",
	Type:        "gpu",
	Memory:      "memory",
	NUMA:        "resource.kubernetes.io/numaNode",
}

// Drivers are the driver models hami-scheduler places pods on.
var Drivers = []Driver{HAMiCore, NVIDIAGPU}

// DriverNamed returns the model of the driver of that name.
func DriverNamed(name string) (Driver, bool) {
	for _, d := range Drivers {
		if d.Name == name {
			return d, true
		}
	}
	return Driver{}, false
}

// model is the card's type as HAMi's device plugin registers it for the
// product name: the name itself when it names NVIDIA first, else
// "NVIDIA-" and the name, so that nvidia.com/use-gputype selects DRA cards
// as it selects device-plugin ones.
func (d Driver) model(product string) string {
	if d.Vendor != "NVIDIA" || strings.HasPrefix(product, "NVIDIA") {
		return product
	}
	return "NVIDIA-" + product
}
