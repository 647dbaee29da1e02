package main

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/internal/allocation"
	"github.com/hami-scheduler/hami-scheduler/internal/clustervendors"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

// The status table reads the DRA nodes' cards from their ResourceSlices
// with the device-plugin nodes' and says each card's kind; slices it may
// not list are said to be missing, not an error.
func TestReadClusterForStatus(t *testing.T) {
	specs, err := simnode.ParseSpecs("1 node x 1 card of Tesla T4 15 GiB; 1 node x 1 card of NVIDIA A100-SXM4-40GB 40 GiB, dra")
	if err != nil {
		t.Fatal(err)
	}
	dp, draNode := specs[0].Build("dp", 0)[0], specs[1].Build("dra", 0)[0]
	slice := specs[1].ResourceSlice(draNode)
	vendors, err := clustervendors.FromConfigs(nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		forbid bool
		want   []string
	}{
		{name: "both kinds", want: []string{"dp-0   device-plugin ", "dra-0  hami-core-gpu.project-hami.io  NVIDIA  #0"}},
		{name: "slices forbidden", forbid: true, want: []string{"dp-0  device-plugin", "not accounted: ResourceSlices (resource.k8s.io) cannot be listed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(dp, draNode, slice)
			if tt.forbid {
				client.PrependReactor("list", "resourceslices", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: resourceapi.GroupName, Resource: "resourceslices"}, "", nil)
				})
			}
			r, err := readCluster(t.Context(), client, allocation.Cluster{Vendors: vendors, Nodes: []corev1.Node{*dp, *draNode},
				DRASplit: devices.SplitCounts(vendors, nil)})
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			allocation.WriteTable(&out, vendors, r, nil)
			for _, want := range tt.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("table lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}
