package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/hami-scheduler/hami-scheduler/apis/scheduling/v1alpha1"
	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const (
	t4a   = "GPU-0a1b2c3d-0000-4000-8000-00000000000a"
	t4b   = "GPU-7f3e9b51-1111-4000-8000-00000000000b"
	p4a   = "GPU-ebe7c3f7-303d-558d-435e-99a160631fe4"
	p4b   = "GPU-3c2e7a10-9d41-4b7e-8f2a-5b6c7d8e9f01"
	a100m = "GPU-5d0c1a2b-6b7a-4c1e-9f00-00000000a100"
)

// node is a node with the annotations; one with NVIDIA's register
// annotation advertises its cards, as a serving device plugin does.
func node(name string, labels, annotations map[string]string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations}}
	if _, ok := annotations[nvidia.RegisterAnnotation]; ok {
		n.Status.Allocatable = corev1.ResourceList{nvidia.DefaultCountName: resource.MustParse("10")}
	}
	return n
}

// pod is a pod bound to nodeName by a HAMi scheduler with the given
// assignment, its containers named after the entries.
func pod(ns, name, nodeName string, phase corev1.PodPhase, allocated string, containers ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{
			nvidia.AllocatedAnnotation: allocated,
			devices.AssignedNode:       nodeName,
		}},
		Spec:   corev1.PodSpec{NodeName: nodeName},
		Status: corev1.PodStatus{Phase: phase},
	}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c})
	}
	return p
}

// cluster is every case of the rendering: a JSON node shared by several
// pods, a legacy-format node with a cordoned, an unhealthy and an
// over-committed card, a MIG node, a node whose register annotation is
// garbage, a CPU node, and pods that are terminated, unbound, moved or
// unreadable.
func cluster() []runtime.Object {
	jsonRegister := `[{"id":"` + t4a + `","count":10,"devmem":15360,"devcore":100,"type":"NVIDIA-Tesla T4","mode":"hami-core","health":true},` +
		`{"id":"` + t4b + `","index":1,"count":10,"devmem":15360,"devcore":100,"type":"NVIDIA-Tesla T4","numa":1,"mode":"hami-core","health":true}]`
	legacyRegister := p4a + ",4,7680,100,NVIDIA-Tesla P4,0,true,0,hami-core:" + p4b + ",4,7680,100,NVIDIA-Tesla P4,0,false,1,hami-core:"
	migRegister := `[{"id":"` + a100m + `","count":7,"devmem":40960,"devcore":100,"type":"NVIDIA A100-SXM4-40GB","mode":"mig","health":true,` +
		`"migProfiles":[{"name":"1g.5gb","memoryMB":4864,"core":15,"sliceCount":1,"placements":[{"start":0,"size":1}]},` +
		`{"name":"3g.20gb","memoryMB":19968,"core":43,"sliceCount":3,"placements":[{"start":4,"size":4}]}]}]`
	return []runtime.Object{
		node("gpu-a", map[string]string{"pool": "train"}, map[string]string{nvidia.RegisterAnnotation: jsonRegister}),
		node("gpu-legacy", map[string]string{"pool": "old"}, map[string]string{
			nvidia.RegisterAnnotation: legacyRegister,
			devices.DeviceCordon:      p4a,
		}),
		node("gpu-mig", map[string]string{"pool": "mig"}, map[string]string{nvidia.RegisterAnnotation: migRegister}),
		node("gpu-broken", map[string]string{"pool": "train"}, map[string]string{nvidia.RegisterAnnotation: "{not json"}),
		node("cpu-0", nil, nil),

		// gpu-a: card 0 shared by ml/train (two containers) and ml/infer,
		// card 1 by ml/infer and default/web.
		pod("ml", "train", "gpu-a", corev1.PodRunning, t4a+",NVIDIA,4000,30:;"+t4a+",NVIDIA,2000,10:;", "trainer", "sidecar"),
		pod("ml", "infer", "gpu-a", corev1.PodRunning, t4a+",NVIDIA,3000,20:"+t4b+",NVIDIA,3000,20:;", "server"),
		pod("default", "web", "gpu-a", corev1.PodPending, ";"+t4b+",NVIDIA,1024,0:;", "init", "app"),
		// Not counted: terminated, unbound, or bound elsewhere than its
		// hami.io/vgpu-node says (reported).
		pod("ml", "done", "gpu-a", corev1.PodSucceeded, t4a+",NVIDIA,8000,50:;", "job"),
		func() runtime.Object {
			p := pod("ml", "waiting", "", corev1.PodPending, t4a+",NVIDIA,8000,50:;", "job")
			p.Annotations[devices.AssignedNode] = "gpu-a"
			return p
		}(),
		func() runtime.Object {
			p := pod("ml", "moved", "gpu-a", corev1.PodRunning, t4b+",NVIDIA,8000,50:;", "job")
			p.Annotations[devices.AssignedNode] = "gpu-legacy"
			return p
		}(),
		// An unreadable assignment is reported, not counted.
		pod("ml", "garbled", "gpu-a", corev1.PodRunning, t4a+",NVIDIA,lots,0:;", "job"),
		// A card the node does not list.
		pod("default", "ghost", "gpu-a", corev1.PodRunning, "GPU-deadbeef-0000,NVIDIA,1000,0:;", "job"),

		// gpu-legacy: card 0 is cordoned and holds three pods of 3000 MiB
		// (over-committed memory); card 1 is unhealthy.
		pod("ml", "old-1", "gpu-legacy", corev1.PodRunning, p4a+",NVIDIA,3000,25:;", "job"),
		pod("ml", "old-2", "gpu-legacy", corev1.PodRunning, p4a+",NVIDIA,3000,25:;", "job"),
		pod("batch", "old-3", "gpu-legacy", corev1.PodRunning, p4a+",NVIDIA,3000,25:;", "job"),

		// gpu-mig: two slices.
		pod("ml", "slice-small", "gpu-mig", corev1.PodRunning, a100m+",NVIDIA,4864,15:;", "cuda"),
		pod("batch", "slice-big", "gpu-mig", corev1.PodRunning, a100m+",NVIDIA,19968,43:;", "cuda"),

		// gpu-broken: its pod cannot be matched to a card; the node says why.
		pod("ml", "on-broken", "gpu-broken", corev1.PodRunning, "GPU-x,NVIDIA,1000,0:;", "job"),
	}
}

// run runs `kubectl-hami args...` against the fake cluster.
func run(t *testing.T, objects []runtime.Object, args ...string) (string, error) {
	t.Helper()
	client, podGroups := fakeClients(t, objects)
	return runWith(t, client, podGroups, args...)
}

// fakeClients serves the objects: PodGroups through a fake dynamic client
// (that serves the PodGroup API even without any), everything else
// through a fake clientset.
func fakeClients(t *testing.T, objects []runtime.Object) (*fake.Clientset, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	var core, groups []runtime.Object
	for _, o := range objects {
		if _, ok := o.(*v1alpha1.PodGroup); ok {
			groups = append(groups, o)
		} else {
			core = append(core, o)
		}
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	listKinds := map[schema.GroupVersionResource]string{v1alpha1.Resource: "PodGroupList"}
	return fake.NewClientset(core...), dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, listKinds, groups...)
}

// runWith runs `kubectl-hami args...` with the clients.
func runWith(t *testing.T, client kubernetes.Interface, podGroups dynamic.Interface, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	root := newRootCommand(streams,
		func() (kubernetes.Interface, error) { return client, nil },
		func() (dynamic.Interface, error) { return podGroups, nil })
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestTopGolden(t *testing.T) {
	tests := []struct {
		name string
		args []string
		// objects is the cluster; cluster() when nil.
		objects func() []runtime.Object
	}{
		{"default", []string{"top"}, nil},
		{"wide", []string{"top", "-o", "wide"}, nil},
		{"json", []string{"top", "-o", "json"}, nil},
		{"namespace", []string{"top", "-n", "ml"}, nil},
		{"namespace-wide", []string{"top", "--namespace=batch", "-o", "wide"}, nil},
		{"nodes", []string{"top", "gpu-mig", "cpu-0"}, nil},
		{"selector", []string{"top", "-l", "pool=train"}, nil},
		{"selector-json", []string{"top", "-l", "pool=mig", "-o", "json"}, nil},
		{"empty", []string{"top", "-l", "pool=none"}, nil},
		{"gang", []string{"top", "-l", "pool=train"}, gangCluster},
		{"gang-wide", []string{"top", "-l", "pool=train", "-o", "wide"}, gangCluster},
		{"gang-json", []string{"top", "gpu-a", "-o", "json"}, gangCluster},
		{"dra", []string{"top"}, draCluster},
		{"dra-wide", []string{"top", "-o", "wide"}, draCluster},
		{"dra-json", []string{"top", "dra-0", "-o", "json"}, draCluster},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objects := cluster
			if tt.objects != nil {
				objects = tt.objects
			}
			got, err := run(t, objects(), tt.args...)
			if err != nil {
				t.Fatalf("kubectl-hami %v: %v", tt.args, err)
			}
			ext := ".txt"
			if strings.Contains(tt.name, "json") {
				ext = ".json"
				var doc Top
				if err := json.Unmarshal([]byte(got), &doc); err != nil {
					t.Fatalf("output is not a Top document: %v\n%s", err, got)
				}
				if doc.APIVersion != TopAPIVersion || doc.Kind != TopKind {
					t.Errorf("apiVersion/kind = %s/%s", doc.APIVersion, doc.Kind)
				}
			}
			golden := filepath.Join("testdata", "top-"+tt.name+ext)
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("kubectl-hami %v differs from %s (-want +got):\n%s", tt.args, golden, diff)
			}
		})
	}
}

func TestTopErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown output", []string{"top", "-o", "yaml"}, `unknown output format "yaml"`},
		{"names and selector", []string{"top", "gpu-a", "-l", "pool=train"}, "cannot be given together with a selector"},
		{"bad selector", []string{"top", "-l", "pool in (("}, "selector"},
		{"unknown node", []string{"top", "gpu-z"}, `"gpu-z" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(t, cluster(), tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("kubectl-hami %v: error %v, want one containing %q", tt.args, err, tt.want)
			}
		})
	}
}

// TestTopAmounts checks the figures behind the rendering, independently of
// the golden files.
func TestTopAmounts(t *testing.T) {
	out, err := run(t, cluster(), "top", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc Top
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	nodes := map[string]TopNode{}
	for _, n := range doc.Nodes {
		nodes[n.Name] = n
	}
	if _, ok := nodes["cpu-0"]; ok || len(doc.Nodes) != 4 {
		t.Errorf("nodes = %v, want the four with a register annotation", doc.Nodes)
	}
	a := nodes["gpu-a"]
	if len(a.Cards) != 2 {
		t.Fatalf("gpu-a cards = %+v", a.Cards)
	}
	c0, c1 := a.Cards[0], a.Cards[1]
	if c0.MemoryMiB != (Amount{9000, 15360}) || c0.Cores != (Amount{60, 100}) || c0.Sharers != (Amount{3, 10}) {
		t.Errorf("gpu-a card 0 = %+v", c0)
	}
	if c1.MemoryMiB != (Amount{4024, 15360}) || c1.Cores != (Amount{20, 100}) || c1.Sharers != (Amount{2, 10}) || c1.NUMA != 1 {
		t.Errorf("gpu-a card 1 = %+v", c1)
	}
	if len(a.Problems) != 3 {
		t.Errorf("gpu-a problems = %+v, want moved, garbled and ghost", a.Problems)
	}
	legacy := nodes["gpu-legacy"]
	if len(legacy.Cards) != 2 || !legacy.Cards[0].Cordoned || !legacy.Cards[0].Overcommitted || legacy.Cards[1].Healthy {
		t.Errorf("gpu-legacy cards = %+v, want card 0 cordoned and over-committed, card 1 unhealthy", legacy.Cards)
	}
	if m := nodes["gpu-mig"]; len(m.Cards) != 1 || m.Cards[0].Mode != "mig" || m.Cards[0].MemoryMiB.Used != 4864+19968 {
		t.Errorf("gpu-mig = %+v", m)
	}
	if b := nodes["gpu-broken"]; !strings.Contains(b.Error, "cannot be read") || len(b.Cards) != 0 || len(b.Problems) != 0 {
		t.Errorf("gpu-broken = %+v, want the reason, no card, no pod problem", b)
	}
	want := Total{Nodes: 3, UnreadableNodes: 1, Cards: 5,
		MemoryMiB: Amount{9000 + 4024 + 9000 + 4864 + 19968, 2*15360 + 2*7680 + 40960},
		Cores:     Amount{60 + 20 + 75 + 58, 500},
		Sharers:   Amount{3 + 2 + 3 + 2, 10 + 10 + 4 + 4 + 7}}
	if diff := cmp.Diff(want, doc.Total); diff != "" {
		t.Errorf("cluster total (-want +got):\n%s", diff)
	}
}

func TestBar(t *testing.T) {
	tests := []struct {
		used, total int64
		want        string
	}{
		{0, 100, "[..........]"},
		{1, 100, "[#.........]"},
		{50, 100, "[#####.....]"},
		{99, 100, "[#########.]"},
		{100, 100, "[##########]"},
		{150, 100, "[##########]"},
		{0, 0, "[..........]"},
		{5, 0, "[##########]"},
	}
	for _, tt := range tests {
		if got := bar(tt.used, tt.total); got != tt.want {
			t.Errorf("bar(%d, %d) = %s, want %s", tt.used, tt.total, got, tt.want)
		}
	}
}

// TestTopOnLocalCluster reads nodes built as `make run` (cmd/hami-local)
// builds them and a pod annotated as the scheduler's PreBind annotates it.
func TestTopOnLocalCluster(t *testing.T) {
	// cmd/hami-local's defaultNodes.
	specs, err := simnode.ParseSpecs("2 nodes x 4 cards of NVIDIA A100-SXM4-40GB 40 GiB, split 10; 1 node x 2 cards of Tesla T4 15 GiB, split 4")
	if err != nil {
		t.Fatal(err)
	}
	var objects []runtime.Object
	n := 0
	for _, s := range specs {
		for _, node := range s.Build("gpu-node", n) {
			objects = append(objects, node)
			n++
		}
	}
	card := simnode.CardUUID("gpu-node-2", 1)
	encoded := devices.EncodeAssignment(devices.Assignment{{{UUID: card, Vendor: nvidia.VendorWord, MemoryMiB: 3000, Cores: 30}}})
	objects = append(objects, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cuda-small",
			Labels: map[string]string{devices.AssignedNode: "gpu-node-2"},
			Annotations: map[string]string{
				devices.AssignedNode: "gpu-node-2", devices.BindPhase: devices.BindPhaseSuccess,
				nvidia.ToAllocateAnnotation: ";", nvidia.AllocatedAnnotation: encoded,
			}},
		Spec:   corev1.PodSpec{NodeName: "gpu-node-2", Containers: []corev1.Container{{Name: "cuda"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	})
	out, err := run(t, objects, "top", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc Top
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Total.Nodes != 3 || doc.Total.Cards != 10 || doc.Total.MemoryMiB.Used != 3000 || doc.Total.Sharers.Used != 1 {
		t.Errorf("total = %+v, want 3 nodes, 10 cards, one 3000 MiB sharer", doc.Total)
	}
	last := doc.Nodes[len(doc.Nodes)-1]
	if last.Name != "gpu-node-2" || len(last.Cards) != 2 || len(last.Cards[1].Pods) != 1 || last.Cards[1].Pods[0].Name != "cuda-small" {
		t.Errorf("gpu-node-2 = %+v, want cuda-small on card 1", last)
	}
	table, err := run(t, objects, "top", "gpu-node-2")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table, "[##........]  3000/15360") || !strings.Contains(table, "default/cuda-small") {
		t.Errorf("table:\n%s", table)
	}
}
