package simnode

import (
	"strings"

	resourceapi "k8s.io/api/resource/v1"
)

// gpuInfo is what NVML reports of a simulated NVIDIA card and both
// NVIDIA-derived DRA drivers publish (HAMi's k8s-dra-driver is a fork of
// NVIDIA's and keeps its GpuInfo): the brand, architecture and CUDA
// compute capability of the model, and the node's driver versions.
type gpuInfo struct {
	brand, architecture, computeCapability string
	driverVersion, cudaDriverVersion       string
}

// simulatedDriverVersion and simulatedCUDAVersion are the NVIDIA driver
// every simulated node runs (a 570 branch release and its CUDA version),
// published semver-normalised as the drivers do ("12.8" -> "12.8.0").
const (
	simulatedDriverVersion = "570.133.20"
	simulatedCUDAVersion   = "12.8.0"
)

// gpuGenerations maps words of NVML model names to their architecture and
// compute capability, first match wins (so "A100" before "A10", "L40"
// before "L4"); any other model is taken for an A100's generation.
var gpuGenerations = []struct {
	words                           []string
	architecture, computeCapability string
}{
	{[]string{"B200", "B100", "GB200", "B300"}, "Blackwell", "10.0.0"},
	{[]string{"H100", "H200", "H800", "H20", "GH200"}, "Hopper", "9.0.0"},
	{[]string{"L40", "L4", "L20", "RTX 40", "4090", "ADA"}, "Ada Lovelace", "8.9.0"},
	{[]string{"A100", "A800", "A30"}, "Ampere", "8.0.0"},
	{[]string{"A10", "A40", "A16", "A2", "A6000", "RTX 30", "3090"}, "Ampere", "8.6.0"},
	{[]string{"T4", "RTX 20", "QUADRO RTX"}, "Turing", "7.5.0"},
	{[]string{"V100"}, "Volta", "7.0.0"},
	{[]string{"P100"}, "Pascal", "6.0.0"},
	{[]string{"P4", "P40"}, "Pascal", "6.1.0"},
}

// nvidiaGPUInfo is the model's gpuInfo. NVML's brand of every data-center
// card modelled here is "Nvidia".
func nvidiaGPUInfo(model string) gpuInfo {
	info := gpuInfo{brand: "Nvidia", architecture: "Ampere", computeCapability: "8.0.0",
		driverVersion: simulatedDriverVersion, cudaDriverVersion: simulatedCUDAVersion}
	upper := strings.ToUpper(model)
	for _, g := range gpuGenerations {
		for _, w := range g.words {
			if strings.Contains(upper, w) {
				info.architecture, info.computeCapability = g.architecture, g.computeCapability
				return info
			}
		}
	}
	return info
}

// nvidiaAttributes are the attributes both NVIDIA-derived drivers publish
// for card i of the node (GpuInfo's): the type given, uuid, productName,
// brand, architecture, cudaComputeCapability, driverVersion and
// cudaDriverVersion.
func nvidiaAttributes(deviceType, node string, i int, s Spec) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
	info := nvidiaGPUInfo(s.Model)
	return map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		"type":                  stringAttr(deviceType),
		"uuid":                  stringAttr(CardUUID(node, i)),
		"productName":           stringAttr(s.Model),
		"brand":                 stringAttr(info.brand),
		"architecture":          stringAttr(info.architecture),
		"cudaComputeCapability": versionAttr(info.computeCapability),
		"driverVersion":         versionAttr(info.driverVersion),
		"cudaDriverVersion":     versionAttr(info.cudaDriverVersion),
	}
}
