package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

func TestVendorSetup(t *testing.T) {
	nvidiaOnly := "1 node x 2 cards of Tesla T4 15 GiB"
	only := filepath.Join(t.TempDir(), "nvidia-only.yaml")
	if err := os.WriteFile(only, []byte("nvidia:\n  resourceCountName: nvidia.com/gpu\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, nodes, path string
		// wantVendors are config names the webhook must get (nil: no
		// device config at all).
		wantVendors []string
		wantErr     string
	}{
		{name: "NVIDIA alone: built-in defaults", nodes: nvidiaOnly},
		{name: "mixed: HAMi's chart config, Ascend and Iluvatar on", nodes: simnode.EveryVendorSpec,
			wantVendors: []string{"nvidia", "ascend", "iluvatar", "hygon", "cambricon", "metax", "metax-sgpu", "kunlun", "kunlun-vxpu",
				"mthreads", "awsneuron", "amd", "enflame-gcu", "enflame-drs", "vastai", "biren"}},
		{name: "a device config without the vendor", nodes: nvidiaOnly + "; 1 node x 2 cards of Hygon DCU Z100 32 GiB", path: only,
			wantErr: "does not enable the vendor"},
		{name: "a device config for NVIDIA alone", nodes: nvidiaOnly, path: only, wantVendors: []string{"nvidia"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			specs, err := simnode.ParseSpecs(tt.nodes)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			args, configs, err := vendorSetup(specs, tt.path, dir)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantVendors == nil {
				if args != nil || configs != nil {
					t.Errorf("args %+v, vendors %d; want the built-in defaults", args, len(configs))
				}
				return
			}
			if args == nil || args.DeviceConfigFile == nil || !*args.EnableAscend || !*args.EnableIluvatar {
				t.Fatalf("args = %+v, want a device config file with Ascend and Iluvatar on", args)
			}
			if tt.path == "" && *args.DeviceConfigFile != filepath.Join(dir, "device-config.yaml") {
				t.Errorf("device config %s, want the chart's written into %s", *args.DeviceConfigFile, dir)
			}
			have := map[string]bool{}
			for _, c := range configs {
				have[c.Name] = true
			}
			for _, v := range tt.wantVendors {
				if !have[v] {
					t.Errorf("vendor %s not enabled (have %v)", v, have)
				}
			}
		})
	}
}

// localClusterDoc is the page about make run, relative to this package.
const localClusterDoc = "../../docs/local-cluster.md"

// The local cluster page's mixed-cluster command is
// simnode.EveryVendorSpec, on which TestEveryVendor runs the vendor
// examples.
func TestDocsMixedCluster(t *testing.T) {
	data, err := os.ReadFile(localClusterDoc)
	if err != nil {
		t.Fatal(err)
	}
	if want := `make run RUN_ARGS='-nodes "` + simnode.EveryVendorSpec + `"'`; !strings.Contains(string(data), want) {
		t.Errorf("%s lacks the mixed-cluster command\n%s", localClusterDoc, want)
	}
}

// The local cluster page's table of model words: each row's example
// picks the row's vendor, and every vendor has a row.
func TestDocsModelWords(t *testing.T) {
	data, err := os.ReadFile(localClusterDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(data), "| vendor | model words | e.g. |\n|---|---|---|\n")
	if !ok {
		t.Fatalf("%s has no table of model words", localClusterDoc)
	}
	table, _, _ = strings.Cut(table, "\n\n")
	// label of each vendor config name, from "label (name): words".
	labels := map[string]string{}
	for _, line := range simnode.Vendors() {
		label, rest, _ := strings.Cut(line, " (")
		name, _, _ := strings.Cut(rest, ")")
		labels[name] = label
	}
	rows := 0
	for row := range strings.SplitSeq(table, "\n") {
		cells := strings.Split(row, "|")
		if len(cells) < 4 {
			t.Fatalf("row %q: want three cells", row)
		}
		label := strings.TrimSpace(cells[1])
		_, example, _ := strings.Cut(cells[3], "`")
		example, _, _ = strings.Cut(example, "`")
		spec, err := simnode.ParseSpec("1 node x 1 card of " + example)
		if err != nil {
			t.Errorf("row %s: %v", label, err)
			continue
		}
		name := spec.Vendor
		if name == "" {
			name = "nvidia"
		}
		if labels[name] != label {
			t.Errorf("row %s: example %q picks %s", label, example, labels[name])
		}
		rows++
	}
	if rows != len(labels) {
		t.Errorf("%d rows, want one per vendor (%d)", rows, len(labels))
	}
}
