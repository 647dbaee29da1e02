package devices

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// fakeVendor asks for as many cards as a container's name has letters 'g',
// or fails when err is set.
type fakeVendor struct {
	name string
	err  error
}

func (f fakeVendor) Name() string             { return f.name }
func (f fakeVendor) Resources() ResourceNames { return ResourceNames{} }
func (f fakeVendor) ParsePod(pod *corev1.Pod) (PodRequest, error) {
	if f.err != nil {
		return PodRequest{}, f.err
	}
	var req PodRequest
	for _, c := range Containers(pod) {
		req.Containers = append(req.Containers, Request{Count: int32(strings.Count(c.Name, "g"))})
	}
	return req, nil
}
func (f fakeVendor) Inventory(*corev1.Node) ([]Card, error)                    { return nil, nil }
func (f fakeVendor) InventoryChanged(_, _ *corev1.Node) bool                   { return false }
func (f fakeVendor) AssignmentAnnotations() (string, string)                   { return "", "" }
func (f fakeVendor) Default(*corev1.Container) (bool, error)                   { return false, nil }
func (f fakeVendor) Fit([]Card, []Usage, *PodRequest) (Assignment, *Rejection) { return nil, nil }

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "name only", cfg: Config{Name: "nvidia"}},
		{name: "all set", cfg: Config{Name: "nvidia", DefaultMemoryMiB: 1000, DefaultCores: 100, DefaultCount: ptr(2), MemoryFactor: 2}},
		{name: "empty name", cfg: Config{}, wantErr: "vendor name is empty"},
		{name: "negative default memory", cfg: Config{Name: "nvidia", DefaultMemoryMiB: -1}, wantErr: "defaultMemoryMiB -1 is negative"},
		{name: "negative default cores", cfg: Config{Name: "nvidia", DefaultCores: -1}, wantErr: "defaultCores -1 is outside 0-100"},
		{name: "default cores above 100", cfg: Config{Name: "nvidia", DefaultCores: 101}, wantErr: "defaultCores 101 is outside 0-100"},
		{name: "negative default count", cfg: Config{Name: "nvidia", DefaultCount: ptr(-2)}, wantErr: "defaultCount -2 is negative"},
		{name: "negative memory factor", cfg: Config{Name: "nvidia", MemoryFactor: -1}, wantErr: "memoryFactor -1 is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate(): %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestNewRegistry(t *testing.T) {
	tests := []struct {
		name      string
		vendors   []Vendor
		wantNames []string
		wantErr   string
	}{
		{name: "none", vendors: nil, wantNames: nil},
		{name: "two in order", vendors: []Vendor{fakeVendor{name: "B"}, fakeVendor{name: "A"}}, wantNames: []string{"B", "A"}},
		{name: "duplicate", vendors: []Vendor{fakeVendor{name: "A"}, fakeVendor{name: "A"}}, wantErr: "vendor A registered twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRegistry(tt.vendors...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("NewRegistry() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewRegistry(): %v", err)
			}
			var names []string
			for _, v := range r.Vendors() {
				names = append(names, v.Name())
			}
			if !reflect.DeepEqual(names, tt.wantNames) {
				t.Errorf("vendors %v, want %v", names, tt.wantNames)
			}
		})
	}
}

func TestRegistryParsePod(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init"}},
		Containers:     []corev1.Container{{Name: "app"}, {Name: "gpu-gang"}},
	}}
	tests := []struct {
		name     string
		vendors  []Vendor
		pod      *corev1.Pod
		wantAny  bool
		wantReqs []PodRequest
		wantErr  string
	}{
		{
			name:     "one vendor asked",
			vendors:  []Vendor{fakeVendor{name: "A"}},
			pod:      pod,
			wantAny:  true,
			wantReqs: []PodRequest{{Containers: []Request{{}, {}, {Count: 3}}}},
		},
		{
			name:     "nothing asked",
			vendors:  []Vendor{fakeVendor{name: "A"}},
			pod:      &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}},
			wantAny:  false,
			wantReqs: []PodRequest{{Containers: []Request{{}}}},
		},
		{
			name:    "vendor error names the vendor",
			vendors: []Vendor{fakeVendor{name: "A"}, fakeVendor{name: "B", err: errors.New("bad annotation")}},
			pod:     pod,
			wantErr: "B: bad annotation",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRegistry(tt.vendors...)
			if err != nil {
				t.Fatal(err)
			}
			reqs, anyReq, err := r.ParsePod(tt.pod)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ParsePod() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePod(): %v", err)
			}
			if anyReq != tt.wantAny {
				t.Errorf("any = %v, want %v", anyReq, tt.wantAny)
			}
			if !reflect.DeepEqual(reqs, tt.wantReqs) {
				t.Errorf("requests %+v, want %+v", reqs, tt.wantReqs)
			}
		})
	}
}

func TestContainers(t *testing.T) {
	tests := []struct {
		name string
		pod  corev1.Pod
		want []string
	}{
		{name: "empty pod", want: []string{}},
		{
			name: "init containers first",
			pod: corev1.Pod{Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "i1"}, {Name: "i2"}},
				Containers:     []corev1.Container{{Name: "c1"}, {Name: "c2"}},
			}},
			want: []string{"i1", "i2", "c1", "c2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Containers(&tt.pod)
			names := []string{}
			for _, c := range got {
				names = append(names, c.Name)
			}
			if !reflect.DeepEqual(names, tt.want) {
				t.Fatalf("Containers() = %v, want %v", names, tt.want)
			}
			// The pointers address the pod's own containers.
			if len(got) > 0 {
				got[0].Name = "renamed"
				if tt.pod.Spec.InitContainers[0].Name != "renamed" {
					t.Errorf("Containers() returned copies, not the pod's containers")
				}
			}
		})
	}
}

func TestResourceNamesAll(t *testing.T) {
	tests := []struct {
		name  string
		names ResourceNames
		want  []corev1.ResourceName
	}{
		{name: "none", names: ResourceNames{}, want: nil},
		{
			name:  "only set names, in field order",
			names: ResourceNames{Count: "a/gpu", Cores: "a/cores", Priority: "a/prio"},
			want:  []corev1.ResourceName{"a/gpu", "a/cores", "a/prio"},
		},
		{
			name:  "all",
			names: ResourceNames{Count: "c", Memory: "m", MemoryPercentage: "p", Cores: "k", Priority: "r"},
			want:  []corev1.ResourceName{"c", "m", "p", "k", "r"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.names.All(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("All() = %v, want %v", got, tt.want)
			}
		})
	}
}

func ptr(v int32) *int32 { return &v }

func TestInitContainersSucceeded(t *testing.T) {
	done := corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}}
	failed := corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}
	running := corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	tests := []struct {
		name     string
		statuses []corev1.ContainerStatus
		want     bool
	}{
		{name: "no init status yet", want: false},
		{name: "all terminated with 0", statuses: []corev1.ContainerStatus{done, done}, want: true},
		{name: "one still running", statuses: []corev1.ContainerStatus{done, running}, want: false},
		{name: "one failed", statuses: []corev1.ContainerStatus{failed, done}, want: false},
		{name: "sidecar running (restartPolicy Always) never finishes", statuses: []corev1.ContainerStatus{running}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{Status: corev1.PodStatus{InitContainerStatuses: tt.statuses}}
			if got := InitContainersSucceeded(pod); got != tt.want {
				t.Errorf("InitContainersSucceeded() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOnlyRenames(t *testing.T) {
	one := int32(1)
	tests := []struct {
		name  string
		cfg   Config
		allow Renamable
		want  bool
	}{
		{name: "name alone", cfg: Config{Name: "x"}, want: true},
		{name: "count renamed", cfg: Config{Name: "x", ResourceCountName: "x.com/c"}, want: true},
		{name: "node defaults", cfg: Config{Name: "x", NodeDefaults: NodeDefaults{SplitCount: 4}}, want: true},
		{name: "memory renamed, not allowed", cfg: Config{Name: "x", ResourceMemoryName: "x.com/m"}, want: false},
		{name: "memory renamed, allowed", cfg: Config{Name: "x", ResourceMemoryName: "x.com/m"}, allow: RenameMemory, want: true},
		{name: "cores renamed, not allowed", cfg: Config{Name: "x", ResourceCoresName: "x.com/k"}, allow: RenameMemory, want: false},
		{name: "cores renamed, allowed", cfg: Config{Name: "x", ResourceCoresName: "x.com/k"}, allow: RenameCores, want: true},
		{name: "percentage renamed", cfg: Config{Name: "x", ResourceMemoryPercentageName: "x.com/p"}, allow: RenameMemory | RenameCores, want: false},
		{name: "priority renamed", cfg: Config{Name: "x", ResourcePriorityName: "x.com/q"}, allow: RenameMemory | RenameCores, want: false},
		{name: "default memory", cfg: Config{Name: "x", DefaultMemoryMiB: 1}, want: false},
		{name: "default cores", cfg: Config{Name: "x", DefaultCores: 1}, want: false},
		{name: "default count", cfg: Config{Name: "x", DefaultCount: &one}, want: false},
		{name: "memory factor", cfg: Config{Name: "x", MemoryFactor: 2}, want: false},
		{name: "runtime class", cfg: Config{Name: "x", RuntimeClassName: "r"}, want: false},
		{name: "overwrite env", cfg: Config{Name: "x", OverwriteEnv: true}, want: false},
		{name: "core policy", cfg: Config{Name: "x", CorePolicy: "force"}, want: false},
		{name: "MIG profiles", cfg: Config{Name: "x", MIGProfiles: []MIGProfileAllow{{}}}, want: false},
		{name: "payload", cfg: Config{Name: "x", Vendor: struct{}{}}, want: false},
	}
	for _, tt := range tests {
		if got := tt.cfg.OnlyRenames(tt.allow); got != tt.want {
			t.Errorf("%s: OnlyRenames(%b) = %v, want %v", tt.name, tt.allow, got, tt.want)
		}
	}
}
