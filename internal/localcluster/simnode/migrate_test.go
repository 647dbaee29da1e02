package simnode

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/hami-scheduler/hami-scheduler/devices/hygon"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

// A node switched to DRA loses its device plugin's registration, handshake
// and resources and names the driver; switched back it is the node it was
// (the handshake aside, which the scheduler stamps again). Switching to
// what the node runs, or to a driver its vendor has not, is refused.
func TestSwitchNodeKind(t *testing.T) {
	tests := []struct {
		spec, word string
		wantDriver string
		gone       []string
		wantErr    string
	}{
		{spec: "1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB", wantDriver: HAMiDRADriver, gone: []string{nvidia.RegisterAnnotation}},
		{spec: "1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB", word: "nvidia", wantDriver: NVIDIADRADriver, gone: []string{nvidia.RegisterAnnotation}},
		{spec: "1 node x 2 cards of Hygon DCU Z100 32 GiB", wantDriver: HygonDRADriver, gone: []string{hygon.RegisterAnnotation}},
		{spec: "1 node x 2 cards of Cambricon MLU370 24 GiB", wantErr: "no DRA driver is modelled for Cambricon MLU cards"},
		{spec: "1 node x 2 cards of NVIDIA A100 40 GiB", word: "hygon", wantErr: "dra hygon: no such DRA driver for NVIDIA cards"},
		{spec: "1 node x 2 cards of NVIDIA A100 40 GiB, dra", wantErr: "runs the DRA driver hami-core-gpu.project-hami.io already"},
	}
	for _, tt := range tests {
		t.Run(tt.spec+" "+tt.word, func(t *testing.T) {
			s, err := ParseSpec(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			node := s.Build("n", 0)[0]
			node.Annotations[handshakePrefix] = "Requesting_2026-12-01 00:00:00"
			client := fake.NewClientset(node)
			ctx := context.Background()
			err = SwitchToDRA(ctx, client, node.Name, tt.word)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("SwitchToDRA error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
			spec, _, err := NodeSpec(got)
			if err != nil || spec.DRA != tt.wantDriver || got.Labels[DRADriverLabel] != tt.wantDriver {
				t.Errorf("spec %+v (%v), label %q: want the driver %s", spec, err, got.Labels[DRADriverLabel], tt.wantDriver)
			}
			for _, key := range append(tt.gone, handshakePrefix) {
				if _, ok := got.Annotations[key]; ok {
					t.Errorf("annotation %s left on the DRA node", key)
				}
			}
			for name := range inventoryOf(node.Name, s).Status.Capacity {
				if _, ok := got.Status.Allocatable[name]; ok {
					t.Errorf("resource %s left on the DRA node", name)
				}
			}
			if err := SwitchToDRA(ctx, client, node.Name, tt.word); err == nil {
				t.Errorf("switching a DRA node to DRA again: no error")
			}
			if err := SwitchToDevicePlugin(ctx, client, node.Name); err != nil {
				t.Fatal(err)
			}
			back, _ := client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
			delete(node.Annotations, handshakePrefix)
			if diff := cmp.Diff(node.Annotations, back.Annotations); diff != "" {
				t.Errorf("annotations after switching back (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(node.Labels, back.Labels); diff != "" {
				t.Errorf("labels after switching back (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(node.Status.Allocatable, back.Status.Allocatable); diff != "" {
				t.Errorf("allocatable after switching back (-before +after):\n%s", diff)
			}
		})
	}
}
