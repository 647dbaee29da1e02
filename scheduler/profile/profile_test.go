package profile

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/utils/ptr"

	hamiconfig "github.com/hami-scheduler/hami-scheduler/apis/config"
	hamiv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
	"github.com/hami-scheduler/hami-scheduler/plugins"
	"github.com/hami-scheduler/hami-scheduler/plugins/dynamicresources"
)

// The deployment manifest and the Go profile are the same configuration.
func TestManifestMatchesProfile(t *testing.T) {
	data, err := os.ReadFile("../../manifests/scheduler-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fromFile, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	versioned, err := Versioned(nil)
	if err != nil {
		t.Fatal(err)
	}
	fromGo, err := Internal(versioned)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fromGo, fromFile); diff != "" {
		t.Errorf("manifests/scheduler-config.yaml differs from profile.Versioned (-go +file):\n%s", diff)
	}
}

func TestProfiles(t *testing.T) {
	custom := &hamiv1.HAMiArgs{
		NodeSchedulerPolicy: ptr.To("spread"),
		Vendors:             []hamiv1.VendorArgs{{Name: "nvidia", ResourceMemoryName: "example.com/vram"}},
	}
	tests := []struct {
		name        string
		args        *hamiv1.HAMiArgs
		withDefault bool
		wantIgnored []string
		// wantIgnoredHas, when set, are some of the ignored resources.
		wantIgnoredHas []string
		wantPolicy     string
		wantErr        string
	}{
		// The shipped list covers every vendor (manifests' routing test
		// checks all of it).
		{name: "defaults", withDefault: true, wantPolicy: "binpack",
			wantIgnoredHas: []string{"nvidia.com/gpumem", "nvidia.com/gpumem-percentage", "nvidia.com/gpucores", "nvidia.com/priority",
				"cambricon.com/mlu.smlu.vmemory", "metax-tech.com/vmemory", "huawei.com/Ascend910B3-memory", "kunlunxin.com/vxpu-memory"}},
		{name: "renamed resources follow the vendor config", args: custom,
			wantIgnored: []string{"nvidia.com/gpu", "example.com/vram", "nvidia.com/gpumem-percentage", "nvidia.com/gpucores", "nvidia.com/priority"},
			wantPolicy:  "spread"},
		{name: "unknown vendor", args: &hamiv1.HAMiArgs{Vendors: []hamiv1.VendorArgs{{Name: "voodoo"}}}, wantErr: "unknown vendor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			profiles, err := Profiles(tt.args, tt.withDefault)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Profiles error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wantProfiles := 1
			if tt.withDefault {
				wantProfiles = 2
			}
			if len(profiles) != wantProfiles || profiles[0].SchedulerName != SchedulerName {
				t.Fatalf("got %d profiles, first %q; want %d, first %q", len(profiles), profiles[0].SchedulerName, wantProfiles, SchedulerName)
			}
			hami := profiles[0]
			// Binpack chooses among every node, not kube-scheduler's sample.
			if p := hami.PercentageOfNodesToScore; p == nil || *p != 100 {
				t.Errorf("percentageOfNodesToScore %v, want 100", p)
			}
			// HAMi runs at every extension point it implements (multiPoint),
			// with its weight, beside the default plugins.
			multi := hami.Plugins.MultiPoint.Enabled
			i := slices.IndexFunc(multi, func(p config.Plugin) bool { return p.Name == plugins.Name })
			if i < 0 || multi[i].Weight != Weight {
				t.Errorf("multiPoint %v: want %s with weight %d", multi, plugins.Name, Weight)
			}
			// kube-scheduler's DynamicResources runs as HAMiDynamicResources
			// (blind to HAMi's resources), before DefaultPreemption as
			// upstream orders the two, and DefaultPreemption's PostFilter
			// still runs before HAMi's and Coscheduling's.
			names := make([]string, len(multi))
			for i, p := range multi {
				names[i] = p.Name
			}
			dra, preempt, hamiAt := slices.Index(names, dynamicresources.Name), slices.Index(names, "DefaultPreemption"), slices.Index(names, plugins.Name)
			if slices.Contains(names, "DynamicResources") || dra < 0 || !(dra < preempt && preempt < hamiAt) {
				t.Errorf("multiPoint %v: want %s, DefaultPreemption, %s in that order, and no DynamicResources", names, dynamicresources.Name, plugins.Name)
			}
			for _, def := range []string{"NodeResourcesFit", "NodeAffinity", "TaintToleration", "DefaultBinder"} {
				if !slices.ContainsFunc(multi, func(p config.Plugin) bool { return p.Name == def }) {
					t.Errorf("default plugin %s missing from multiPoint %v", def, multi)
				}
			}
			var gotArgs *hamiconfig.HAMiArgs
			for _, pc := range hami.PluginConfig {
				switch args := pc.Args.(type) {
				case *config.NodeResourcesFitArgs:
					for _, name := range tt.wantIgnoredHas {
						if !slices.Contains(args.IgnoredResources, name) {
							t.Errorf("NodeResourcesFit ignoredResources %v lack %s", args.IgnoredResources, name)
						}
					}
					if tt.wantIgnoredHas != nil {
						continue
					}
					if diff := cmp.Diff(tt.wantIgnored, args.IgnoredResources); diff != "" {
						t.Errorf("NodeResourcesFit ignoredResources (-want +got):\n%s", diff)
					}
				case *hamiconfig.HAMiArgs:
					gotArgs = args
				}
			}
			// The HAMi args are typed and defaulted, whether given or not.
			if gotArgs == nil || gotArgs.NodeSchedulerPolicy != tt.wantPolicy || gotArgs.NodeLockWait.Duration == 0 {
				t.Errorf("%s args %+v, want typed defaulted args with node policy %q", plugins.Name, gotArgs, tt.wantPolicy)
			}
			if tt.withDefault {
				def := profiles[1]
				if def.PercentageOfNodesToScore != nil {
					t.Errorf("%s percentageOfNodesToScore %d, want kube-scheduler's default", DefaultSchedulerName, *def.PercentageOfNodesToScore)
				}
				if def.SchedulerName != DefaultSchedulerName {
					t.Errorf("second profile %q, want %q", def.SchedulerName, DefaultSchedulerName)
				}
				if slices.ContainsFunc(def.Plugins.MultiPoint.Enabled, func(p config.Plugin) bool { return p.Name == plugins.Name }) {
					t.Errorf("%s must not run in %s", plugins.Name, DefaultSchedulerName)
				}
			}
		})
	}
}

func TestDecodeRejectsGarbage(t *testing.T) {
	for _, in := range []string{"", "kind: Pod\napiVersion: v1\n", "{{{"} {
		if _, err := Decode([]byte(in)); err == nil {
			t.Errorf("Decode(%q) succeeded, want an error", in)
		}
	}
}

// File writes the configuration Profiles runs: read back as
// kube-scheduler reads its file, it holds the same profiles, and the
// rest is the shipped configuration.
func TestFile(t *testing.T) {
	tests := []struct {
		name        string
		args        *hamiv1.HAMiArgs
		withDefault bool
	}{
		{name: "shipped"},
		{name: "spread with the default profile", args: &hamiv1.HAMiArgs{NodeSchedulerPolicy: ptr.To("spread"), NodeQueueLimit: ptr.To[int32](0)}, withDefault: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := File(tt.args, tt.withDefault)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Decode(data)
			if err != nil {
				t.Fatalf("%v\n%s", err, data)
			}
			want, err := Profiles(tt.args, tt.withDefault)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got.Profiles); diff != "" {
				t.Errorf("profiles read back from File (-Profiles +File):\n%s", diff)
			}
			shipped, err := Versioned(nil)
			if err != nil {
				t.Fatal(err)
			}
			internal, err := Internal(shipped)
			if err != nil {
				t.Fatal(err)
			}
			got.Profiles, internal.Profiles = nil, nil
			if diff := cmp.Diff(internal, got); diff != "" {
				t.Errorf("settings besides the profiles differ from the shipped ones (-shipped +File):\n%s", diff)
			}
		})
	}
}
