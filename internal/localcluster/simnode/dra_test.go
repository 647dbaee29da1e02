package simnode

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	resourceinternal "k8s.io/kubernetes/pkg/apis/resource"
	_ "k8s.io/kubernetes/pkg/apis/resource/install"
	"k8s.io/kubernetes/pkg/apis/resource/validation"

	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

// "dra" and "dra <word>" pick each vendor's DRA driver; what a DRA node
// cannot have is refused naming the setting.
func TestParseSpecDRA(t *testing.T) {
	tests := []struct {
		in      string
		want    Spec
		wantErr string
	}{
		{in: "2 nodes x 4 cards of NVIDIA A100-SXM4-40GB 40 GiB, dra",
			want: Spec{Nodes: 2, Cards: 4, Model: "NVIDIA A100-SXM4-40GB", MemoryMiB: 40960, Split: DefaultSplit, Cores: 100, DRA: HAMiDRADriver}},
		{in: "1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB, DRA hami",
			want: Spec{Nodes: 1, Cards: 2, Model: "NVIDIA A100-SXM4-40GB", MemoryMiB: 40960, Split: DefaultSplit, Cores: 100, DRA: HAMiDRADriver}},
		{in: "1 node x 2 cards of Tesla T4 15 GiB, dra nvidia",
			want: Spec{Nodes: 1, Cards: 2, Model: "Tesla T4", MemoryMiB: 15360, Split: DefaultSplit, Cores: 100, DRA: NVIDIADRADriver}},
		{in: "1 node x 2 cards of Hygon DCU Z100 32 GiB, cores 60, dra",
			want: Spec{Nodes: 1, Cards: 2, Model: "Hygon DCU Z100", Vendor: "hygon", MemoryMiB: 32768, Split: 4, Cores: 60, DRA: HygonDRADriver}},
		{in: "1 node x 4 cards of Ascend910B4 32 GiB, dra ascend",
			want: Spec{Nodes: 1, Cards: 4, Model: "Ascend910B4", Vendor: "ascend", MemoryMiB: 32768, Split: 4, Cores: 100, DRA: AscendDRADriver}},
		{in: "1 node x 2 cards of NVIDIA A100 40 GiB, dra amd", wantErr: `dra amd: no such DRA driver for NVIDIA cards (want dra, or dra followed by one of hami, nvidia)`},
		{in: "1 node x 2 cards of Hygon DCU Z100 32 GiB, dra nvidia", wantErr: `dra nvidia: no such DRA driver for Hygon DCU cards`},
		{in: "1 node x 2 cards of Cambricon MLU370 24 GiB, dra", wantErr: `dra: no DRA driver is modelled for Cambricon MLU cards`},
		{in: "1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB, mig, dra", wantErr: "mig: HAMi DRA driver publishes full cards"},
		{in: "1 node x 2 cards of NVIDIA A100 40 GiB, split 4, dra", wantErr: "split 4: HAMi DRA driver shares a card by its capacity"},
		{in: "1 node x 2 cards of NVIDIA A100 40 GiB, dra nvidia, cores 200", wantErr: "cores 200: NVIDIA DRA driver publishes its own cores"},
		{in: "1 node x 4 cards of Ascend910B4 32 GiB, hami-core, dra", wantErr: "hami-core: the setting is HAMi's Ascend device plugin's"},
		{in: "1 node x 2 cards of NVIDIA A100 40 GiB, dra, dra nvidia", wantErr: `setting "dra nvidia": dra given twice`},
		{in: "1 node x 2 cards of NVIDIA A100 40 GiB, draft", wantErr: `unknown setting "draft" (want split N, cores N, mig, hami-core or dra [driver])`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSpec(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseSpec(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseSpec(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("ParseSpec(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			again, err := ParseSpec(got.String())
			if err != nil || again != got {
				t.Errorf("ParseSpec(%q) = %+v, %v; want %+v", got.String(), again, err, got)
			}
		})
	}
}

// A DRA node carries no HAMi registration and no device plugin resource,
// the label naming its driver and its spec; a device-plugin node its spec
// too.
func TestBuildDRANode(t *testing.T) {
	dra, err := ParseSpec("1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB, dra")
	if err != nil {
		t.Fatal(err)
	}
	n := dra.Build("g", 0)[0]
	if _, ok := n.Annotations[nvidia.RegisterAnnotation]; ok {
		t.Errorf("DRA node has HAMi's register annotation")
	}
	if _, ok := n.Status.Allocatable[nvidia.DefaultCountName]; ok {
		t.Errorf("DRA node advertises %s", nvidia.DefaultCountName)
	}
	if n.Labels[DRADriverLabel] != HAMiDRADriver || n.Annotations[SpecAnnotation] != dra.String() {
		t.Errorf("labels %v, annotations %v: want %s=%s and the spec", n.Labels, n.Annotations, DRADriverLabel, HAMiDRADriver)
	}
	again, ok, err := NodeSpec(n)
	if err != nil || !ok || again != dra {
		t.Errorf("NodeSpec = %+v, %v, %v; want %+v", again, ok, err, dra)
	}
	plain := dra
	plain.DRA = ""
	n = plain.Build("g", 0)[0]
	if _, ok := n.Labels[DRADriverLabel]; ok || n.Annotations[nvidia.RegisterAnnotation] == "" || n.Annotations[SpecAnnotation] != plain.String() {
		t.Errorf("device-plugin node: labels %v, annotations %v", n.Labels, n.Annotations)
	}
}

// Each model publishes, per card, the device its driver's source builds:
// its name, type attribute, capacities and request policies; and the
// slice passes the API server's own validation.
func TestDRADevices(t *testing.T) {
	tests := []struct {
		spec       string
		wantNames  []string
		wantType   string
		wantAttrs  []resourceapi.QualifiedName
		wantPolicy map[resourceapi.QualifiedName]string // value default min max step
	}{
		{spec: "1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB, dra",
			wantNames: []string{"hami-gpu-0", "hami-gpu-1"}, wantType: "hami-gpu",
			wantAttrs: []resourceapi.QualifiedName{"uuid", "minor", "productName", "brand", "architecture", "cudaComputeCapability",
				"driverVersion", "cudaDriverVersion", "pcieBusID", standardPCIeRoot},
			wantPolicy: map[resourceapi.QualifiedName]string{"cores": "100 100 0 100 1", "memory": "40Gi 40Gi 1Mi 40Gi 1Mi"}},
		{spec: "1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB, dra nvidia",
			wantNames: []string{"gpu-0", "gpu-1"}, wantType: "gpu",
			wantAttrs: []resourceapi.QualifiedName{"uuid", "productName", "brand", "architecture", "cudaComputeCapability",
				"driverVersion", "cudaDriverVersion", standardPCIBusID, standardPCIeRoot, standardNUMANode},
			wantPolicy: map[resourceapi.QualifiedName]string{"memory": "40Gi 40Gi 1Mi 40Gi 1Mi"}},
		{spec: "1 node x 2 cards of Hygon DCU Z100 32 GiB, cores 60, dra",
			wantNames: []string{"hcu-0000-01-00-0", "hcu-0000-82-00-0"}, wantType: "hcu",
			wantAttrs:  []resourceapi.QualifiedName{"uuid", "productName", "architecture", "brand"},
			wantPolicy: map[resourceapi.QualifiedName]string{"cores": "60 60 0 60 1", "memory": "32Gi 32Gi 0 32Gi 1Mi", "slices": "4 1 1 4 1"}},
		{spec: "1 node x 2 cards of Ascend910B4 32 GiB, dra",
			wantNames: []string{"npu-0-0", "npu-1-0"}, wantType: "HAMivNPUCore",
			wantAttrs:  []resourceapi.QualifiedName{"index", "physicalID", "uuid", "model", "productName", "brand"},
			wantPolicy: map[resourceapi.QualifiedName]string{"cores": "100 100 0 100 1", "memory": "32Gi 32Gi 1Mi 32Gi 1Mi"}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			s, err := ParseSpec(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			devs := s.DRADevices("node-a")
			if len(devs) != len(tt.wantNames) {
				t.Fatalf("%d devices, want %d", len(devs), len(tt.wantNames))
			}
			for i, d := range devs {
				if d.Name != tt.wantNames[i] {
					t.Errorf("device %d named %q, want %q", i, d.Name, tt.wantNames[i])
				}
				if got := attrString(d, "type"); got != tt.wantType {
					t.Errorf("%s: type %q, want %q", d.Name, got, tt.wantType)
				}
				for _, a := range tt.wantAttrs {
					if _, ok := d.Attributes[a]; !ok {
						t.Errorf("%s: no attribute %s", d.Name, a)
					}
				}
				if d.AllowMultipleAllocations == nil || !*d.AllowMultipleAllocations {
					t.Errorf("%s: not allowMultipleAllocations", d.Name)
				}
				if len(d.Capacity) != len(tt.wantPolicy) {
					t.Errorf("%s: capacities %v, want %v", d.Name, d.Capacity, tt.wantPolicy)
				}
				for name, want := range tt.wantPolicy {
					c, ok := d.Capacity[name]
					if !ok || c.RequestPolicy == nil || c.RequestPolicy.ValidRange == nil {
						t.Errorf("%s: capacity %s = %+v, want a request policy", d.Name, name, c)
						continue
					}
					r := c.RequestPolicy.ValidRange
					got := strings.Join([]string{c.Value.String(), c.RequestPolicy.Default.String(), r.Min.String(), r.Max.String(), r.Step.String()}, " ")
					if got != want {
						t.Errorf("%s: capacity %s (value default min max step) = %s, want %s", d.Name, name, got, want)
					}
				}
			}
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "uid-a"}}
			slice := s.ResourceSlice(node)
			slice.Name = slice.GenerateName + "x"
			var internal resourceinternal.ResourceSlice
			if err := legacyscheme.Scheme.Convert(slice, &internal, nil); err != nil {
				t.Fatal(err)
			}
			if errs := validation.ValidateResourceSlice(&internal); len(errs) > 0 {
				t.Errorf("the API server refuses the slice: %v", errs.ToAggregate())
			}
		})
	}
}

// Every driver's chart DeviceClass selects its devices by driver and type;
// NVIDIA's maps nvidia.com/gpu, HAMi-DRA's maps none.
func TestDeviceClasses(t *testing.T) {
	specs, err := ParseSpecs("1 node x 1 card of A100 40 GiB; 1 node x 1 card of A100 40 GiB, dra nvidia; " +
		"1 node x 1 card of A100 40 GiB, dra; 1 node x 1 card of A100 40 GiB, dra")
	if err != nil {
		t.Fatal(err)
	}
	classes := DeviceClasses(specs)
	if len(classes) != 2 || classes[0].Name != HAMiDRADriver || classes[1].Name != NVIDIADRADriver {
		t.Fatalf("classes %v, want HAMi's and NVIDIA's once each", classes)
	}
	if classes[0].Spec.ExtendedResourceName != nil || *classes[1].Spec.ExtendedResourceName != "nvidia.com/gpu" {
		t.Errorf("extendedResourceName %v and %v, want none and nvidia.com/gpu", classes[0].Spec.ExtendedResourceName, classes[1].Spec.ExtendedResourceName)
	}
	want := `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu"`
	if got := classes[1].Spec.Selectors[0].CEL.Expression; got != want {
		t.Errorf("selector %s, want %s", got, want)
	}
	for _, c := range classes {
		var internal resourceinternal.DeviceClass
		if err := legacyscheme.Scheme.Convert(c, &internal, nil); err != nil {
			t.Fatal(err)
		}
		if errs := validation.ValidateDeviceClass(&internal); len(errs) > 0 {
			t.Errorf("%s: the API server refuses it: %v", c.Name, errs.ToAggregate())
		}
	}
	if DeviceClasses(specs[:1]) != nil {
		t.Errorf("a device-plugin cluster gets DeviceClasses")
	}
}
