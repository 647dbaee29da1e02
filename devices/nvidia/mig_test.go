package nvidia

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// migInventory is a node in mig mode as HAMi's device plugin registers an
// A100-SXM4-40GB with the chart's allowlist (1g.5gb, 2g.10gb, 3g.20gb,
// 7g.40gb).
const migInventory = `[{"id":"GPU-a","count":7,"devmem":40960,"devcore":100,"type":"NVIDIA A100-SXM4-40GB","mode":"mig","health":true,"migProfiles":[` +
	`{"name":"1g.5gb","memoryMB":4864,"core":15,"sliceCount":1,"placements":[{"start":0,"size":1},{"start":1,"size":1},{"start":2,"size":1},{"start":3,"size":1},{"start":4,"size":1},{"start":5,"size":1},{"start":6,"size":1}]},` +
	`{"name":"2g.10gb","memoryMB":9856,"core":29,"sliceCount":2,"placements":[{"start":0,"size":2},{"start":2,"size":2},{"start":4,"size":2}]},` +
	`{"name":"3g.20gb","memoryMB":19968,"core":43,"sliceCount":3,"placements":[{"start":0,"size":4},{"start":4,"size":4}]},` +
	`{"name":"7g.40gb","memoryMB":40192,"core":100,"sliceCount":7,"placements":[{"start":0,"size":8}]}]}]`

// TestMIGPodToAnnotations runs a MIG pod through ParsePod, Fit, the
// assignment encoding and AssignmentExtras, and checks the exact values
// the device plugin reads.
func TestMIGPodToAnnotations(t *testing.T) {
	v := mustNew(t, devices.Config{})
	cards, err := v.Inventory(node(map[string]string{RegisterAnnotation: migInventory}, res("nvidia.com/gpu", "7")))
	if err != nil {
		t.Fatal(err)
	}
	p := pod(nil,
		limits("small", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "4000"),
		limits("sidecar"),
		limits("mid", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "8000"))
	p.Spec.InitContainers = []corev1.Container{limits("init", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "15000")}
	req, err := v.ParsePod(p)
	if err != nil {
		t.Fatal(err)
	}
	a, rej := v.Fit(cards, make([]devices.Usage, len(cards)), &req)
	if rej != nil {
		t.Fatal(rej.Reason())
	}
	wantAssignment := "GPU-a,NVIDIA,19968,43:;GPU-a,NVIDIA,4864,15:;;GPU-a,NVIDIA,9856,29:;"
	if got := devices.EncodeAssignment(a); got != wantAssignment {
		t.Errorf("assignment %s\nwant       %s", got, wantAssignment)
	}
	extras, err := v.AssignmentExtras(p, a, time.Unix(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	wantMIG := `[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"3g.20gb","placement":{"start":4,"size":4}},` +
		`{"containerIndex":1,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"1g.5gb","placement":{"start":3,"size":1}},` +
		`{"containerIndex":3,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"2g.10gb","placement":{"start":0,"size":2}}]`
	if got := extras[MIGAllocationsAnnotation]; got != wantMIG || len(extras) != 1 {
		t.Errorf("extras %v\nwant %s", extras, wantMIG)
	}
	// The annotation reads back as the assignment's reservations.
	back, err := DecodeMIGAllocations(wantMIG)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(back), len(devices.Reservations(a)); got != want {
		t.Fatalf("decoded %d reservations, want %d", got, want)
	}
	for i, r := range devices.Reservations(a) {
		if back[i] != r {
			t.Errorf("reservation %d: decoded %+v, want %+v", i, back[i], r)
		}
	}
}

func TestAssignmentExtrasWithoutMIG(t *testing.T) {
	v := mustNew(t, devices.Config{})
	extras, err := v.AssignmentExtras(pod(nil), devices.Assignment{{{UUID: "GPU-0", Vendor: "NVIDIA", MemoryMiB: 1000}}}, time.Unix(1, 0))
	if err != nil || extras != nil {
		t.Fatalf("extras %v, %v; want none", extras, err)
	}
}

func TestDecodeMIGAllocations(t *testing.T) {
	ok := `{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"1g.5gb","placement":{"start":6,"size":1}}`
	tests := []struct {
		name    string
		raw     string
		want    int
		wantErr string
	}{
		{name: "empty value holds nothing", raw: "", want: 0},
		{name: "valid", raw: "[" + ok + "]", want: 1},
		{name: "with the device plugin's runtime identity", raw: `[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"1g.5gb","placement":{"start":6,"size":1},"migUUID":"MIG-x","gpuInstanceID":13,"computeInstanceID":0}]`, want: 1},
		{name: "not JSON", raw: "GPU-a[1g.5gb-0]", wantErr: "invalid"},
		{name: "negative index", raw: `[{"containerIndex":-1,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"1g.5gb","placement":{"start":6,"size":1}}]`, wantErr: "incomplete"},
		{name: "empty uuid", raw: `[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"","profile":"1g.5gb","placement":{"start":6,"size":1}}]`, wantErr: "incomplete"},
		{name: "empty profile", raw: `[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"","placement":{"start":6,"size":1}}]`, wantErr: "incomplete"},
		{name: "size 0", raw: `[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"1g.5gb","placement":{"start":6,"size":0}}]`, wantErr: "incomplete"},
		{name: "negative placement", raw: `[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"1g.5gb","placement":{"start":-1,"size":1}}]`, wantErr: "cannot unmarshal"},
		{name: "partial runtime identity", raw: `[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"1g.5gb","placement":{"start":6,"size":1},"migUUID":"MIG-x"}]`, wantErr: "runtime identity"},
		{name: "duplicate container and device", raw: "[" + ok + "," + ok + "]", wantErr: "twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeMIGAllocations(tt.raw)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want it to contain %q", err, tt.wantErr)
				}
				if v := mustNew(t, devices.Config{}); v.PodSlices(pod(map[string]string{MIGAllocationsAnnotation: tt.raw})) != nil {
					t.Fatal("PodSlices of an invalid value: want nil (ignored, as HAMi)")
				}
				return
			}
			if err != nil || len(got) != tt.want {
				t.Fatalf("got %v, %v; want %d reservations", got, err, tt.want)
			}
		})
	}
}

// TestDecodeMIGAllocationsRuntime: the device plugin's runtime identity is
// kept with the slice, for the scheduler's MIG instance metric.
func TestDecodeMIGAllocationsRuntime(t *testing.T) {
	got, err := DecodeMIGAllocations(`[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"1g.5gb","placement":{"start":6,"size":1},"migUUID":"MIG-x","gpuInstanceID":13,"computeInstanceID":0},` +
		`{"containerIndex":1,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"1g.5gb","placement":{"start":5,"size":1}}]`)
	if err != nil {
		t.Fatal(err)
	}
	want := devices.MIGRuntime{UUID: "MIG-x", GPUInstance: 13, ComputeInstance: 0}
	if len(got) != 2 || got[0].Runtime != want || !got[0].Runtime.Ready() || got[1].Runtime.Ready() {
		t.Fatalf("decoded %+v, want the first with runtime %+v and the second without", got, want)
	}
}
