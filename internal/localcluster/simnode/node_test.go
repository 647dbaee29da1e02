package simnode

import (
	"regexp"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

func TestRegisterAnnotationFormat(t *testing.T) {
	s := Spec{Nodes: 1, Cards: 2, Model: "Tesla T4", MemoryMiB: 15360, Split: 10, Cores: 100}
	got := RegisterAnnotation("n", s)
	// HAMi's field order; index and numa omitted when 0; the model gets the
	// vendor prefix because it does not start with NVIDIA.
	want := `[{"id":"` + CardUUID("n", 0) + `","count":10,"devmem":15360,"devcore":100,"type":"NVIDIA-Tesla T4","mode":"hami-core","health":true},` +
		`{"id":"` + CardUUID("n", 1) + `","index":1,"count":10,"devmem":15360,"devcore":100,"type":"NVIDIA-Tesla T4","numa":1,"mode":"hami-core","health":true}]`
	if got != want {
		t.Errorf("RegisterAnnotation =\n%s\nwant\n%s", got, want)
	}
}

func TestCardUUID(t *testing.T) {
	shape := regexp.MustCompile(`^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for _, node := range []string{"a", "b"} {
		for i := range 4 {
			id := CardUUID(node, i)
			if !shape.MatchString(id) {
				t.Errorf("CardUUID(%q, %d) = %q, not shaped like an NVML UUID", node, i, id)
			}
			if seen[id] {
				t.Errorf("CardUUID(%q, %d) = %q repeats", node, i, id)
			}
			seen[id] = true
			if again := CardUUID(node, i); again != id {
				t.Errorf("CardUUID(%q, %d) is not stable: %q then %q", node, i, id, again)
			}
		}
	}
}

func TestCardType(t *testing.T) {
	for model, want := range map[string]string{
		"Tesla T4":              "NVIDIA-Tesla T4",
		"NVIDIA A100-SXM4-40GB": "NVIDIA A100-SXM4-40GB",
		"NVIDIA H20-3e":         "NVIDIA H20-3e",
	} {
		if got := CardType(model); got != want {
			t.Errorf("CardType(%q) = %q, want %q", model, got, want)
		}
	}
}

// The nodes read back, through the scheduler's own vendor, as the cards
// the spec describes.
func TestBuildReadsBackThroughVendor(t *testing.T) {
	vendor, err := nvidia.New(devices.Config{Name: "nvidia"})
	if err != nil {
		t.Fatal(err)
	}
	s := Spec{Nodes: 3, Cards: 8, Model: "NVIDIA A100", MemoryMiB: 40960, Split: 10, Cores: 100}
	nodes := s.Build("gpu", 5)
	if len(nodes) != 3 || nodes[0].Name != "gpu-5" || nodes[2].Name != "gpu-7" {
		t.Fatalf("Build named %v, want gpu-5..gpu-7", []string{nodes[0].Name, nodes[len(nodes)-1].Name})
	}
	for _, n := range nodes {
		if q := n.Status.Allocatable[nvidia.DefaultCountName]; q.Value() != 80 {
			t.Errorf("node %s allocatable %s = %s, want 80 (cards x split)", n.Name, nvidia.DefaultCountName, q.String())
		}
		if q := n.Status.Capacity[nvidia.DefaultCountName]; q.Value() != 80 {
			t.Errorf("node %s capacity %s = %s, want 80", n.Name, nvidia.DefaultCountName, q.String())
		}
		if n.Labels[SimulatedLabel] != "true" || n.Labels[corev1.LabelHostname] != n.Name {
			t.Errorf("node %s labels %v lack the simulation or hostname label", n.Name, n.Labels)
		}
		cards, err := vendor.Inventory(n)
		if err != nil {
			t.Fatalf("node %s: %v", n.Name, err)
		}
		if len(cards) != 8 {
			t.Fatalf("node %s has %d cards, want 8", n.Name, len(cards))
		}
		for i, c := range cards {
			want := devices.Card{UUID: CardUUID(n.Name, i), Index: i, Split: 10, MemoryMiB: 40960, Cores: 100,
				Model: "NVIDIA A100", NUMA: i / 4, Mode: "hami-core", Healthy: true}
			if c != want {
				t.Errorf("node %s card %d = %+v, want %+v", n.Name, i, c, want)
			}
		}
	}
}

func TestMIGRegisterAnnotation(t *testing.T) {
	specs, err := ParseSpecs("1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB, mig")
	if err != nil {
		t.Fatal(err)
	}
	got := RegisterAnnotation("n", specs[0])
	card := func(i int, numa string) string {
		return `{"id":"` + CardUUID("n", i) + `",` + map[bool]string{true: "", false: `"index":1,`}[i == 0] +
			`"count":7,"devmem":40960,"devcore":100,"type":"NVIDIA A100-SXM4-40GB",` + numa + `"mode":"mig","migProfiles":[` +
			`{"name":"1g.5gb","memoryMB":4864,"core":15,"sliceCount":1,"placements":[{"start":0,"size":1},{"start":1,"size":1},{"start":2,"size":1},{"start":3,"size":1},{"start":4,"size":1},{"start":5,"size":1},{"start":6,"size":1}]},` +
			`{"name":"2g.10gb","memoryMB":9856,"core":29,"sliceCount":2,"placements":[{"start":0,"size":2},{"start":2,"size":2},{"start":4,"size":2}]},` +
			`{"name":"3g.20gb","memoryMB":19968,"core":43,"sliceCount":3,"placements":[{"start":0,"size":4},{"start":4,"size":4}]},` +
			`{"name":"7g.40gb","memoryMB":40192,"core":100,"sliceCount":7,"placements":[{"start":0,"size":8}]}],"health":true}`
	}
	want := "[" + card(0, "") + "," + card(1, `"numa":1,`) + "]"
	if got != want {
		t.Fatalf("register\n%s\nwant\n%s", got, want)
	}
	// The scheduler reads them as mig cards with the four profiles.
	cards, err := devices.DecodeInventory(got)
	if err != nil {
		t.Fatal(err)
	}
	if cards[0].Mode != devices.ModeMIG || cards[0].MIG == nil || len(cards[0].MIG.List) != 4 || cards[0].Split != 7 {
		t.Fatalf("decoded %+v", cards[0])
	}
	if n := specs[0].Build("n", 0)[0]; n.Status.Allocatable.Name("nvidia.com/gpu", "").Value() != 14 {
		t.Fatalf("allocatable nvidia.com/gpu %v, want 14 (2 cards x 7)", n.Status.Allocatable)
	}
}
