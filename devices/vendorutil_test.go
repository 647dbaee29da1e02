package devices

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestContainerQuantity(t *testing.T) {
	c := &corev1.Container{Resources: corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{"a": resource.MustParse("3"), "frac": resource.MustParse("0.5"), "big": resource.MustParse("3Gi")},
		Requests: corev1.ResourceList{"a": resource.MustParse("1"), "b": resource.MustParse("2")},
	}}
	tests := []struct {
		name    corev1.ResourceName
		want    int32
		ok      bool
		wantErr bool
	}{
		{name: "a", want: 3, ok: true},
		{name: "b", want: 2, ok: true},
		{name: "c"},
		{name: ""},
		{name: "frac", wantErr: true},
		{name: "big", wantErr: true},
	}
	for _, tt := range tests {
		got, ok, err := ContainerQuantity(c, tt.name)
		if (err != nil) != tt.wantErr || got != tt.want || ok != tt.ok {
			t.Errorf("ContainerQuantity(%q) = %d, %v, %v", tt.name, got, ok, err)
		}
	}
}

func TestScaleMemory(t *testing.T) {
	for _, tt := range []struct {
		mib, factor, want int32
		wantErr           bool
	}{
		{mib: 1000, factor: 0, want: 1000},
		{mib: 1000, factor: 1, want: 1000},
		{mib: 1000, factor: 4, want: 4000},
		{mib: 1 << 30, factor: 2, wantErr: true},
	} {
		got, err := ScaleMemory("m", tt.mib, tt.factor)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ScaleMemory(%d, %d) = %d, %v", tt.mib, tt.factor, got, err)
		}
	}
}

func TestApplyGPUSchedulerPolicy(t *testing.T) {
	var p Preferences
	if err := ApplyGPUSchedulerPolicy(&p, " binpack , mutex,numa,topology-aware"); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, Preferences{Policy: CardBinpack, Exclusive: true}) {
		t.Errorf("preferences = %+v", p)
	}
	if err := ApplyGPUSchedulerPolicy(&p, "best"); err == nil || !strings.Contains(err.Error(), CardPolicyAnnotation) {
		t.Errorf("error = %v", err)
	}
}

func TestKeepModel(t *testing.T) {
	cards := []Card{{UUID: "a", Model: "DCU-K100"}, {UUID: "b", Model: "NVIDIA-T4"}, {UUID: "c", Model: "dcu"}}
	got := KeepModel(cards, "DCU")
	if len(got) != 2 || got[0].UUID != "a" || got[1].UUID != "c" {
		t.Errorf("KeepModel() = %+v", got)
	}
	if got := SplitUpperList(" a, ,b "); !reflect.DeepEqual(got, []string{"A", "B"}) {
		t.Errorf("SplitUpperList() = %q", got)
	}
}

// TestCountRequests: the two readers of count-only containers, and how
// ParseContainers collects them.
func TestCountRequests(t *testing.T) {
	c := func(q string) *corev1.Container {
		return &corev1.Container{Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"x/c": resource.MustParse(q)}}}
	}
	tests := []struct {
		name  string
		read  func(*corev1.Container) (Request, error)
		c     *corev1.Container
		want  Request
		error bool
	}{
		{name: "count only: whole memory, no cores", read: CountOnlyRequest("x/c"), c: c("2"), want: Request{Count: 2, MemoryPercent: 100}},
		{name: "whole card: all memory, all cores", read: WholeCardRequest("x/c"), c: c("2"), want: Request{Count: 2, MemoryPercent: 100, Cores: 100}},
		{name: "whole card: zero asks nothing", read: WholeCardRequest("x/c"), c: c("0")},
		{name: "whole card: not asked", read: WholeCardRequest("x/other"), c: c("1")},
		{name: "whole card: a fraction is an error", read: WholeCardRequest("x/c"), c: c("0.5"), error: true},
	}
	for _, tt := range tests {
		got, err := tt.read(tt.c)
		if (err != nil) != tt.error || got != tt.want {
			t.Errorf("%s: %+v, %v; want %+v (error %v)", tt.name, got, err, tt.want, tt.error)
		}
	}
}

func TestWholeCapacity(t *testing.T) {
	node := &corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{
		"x/n": resource.MustParse("4"), "x/frac": resource.MustParse("1.5"), "x/neg": resource.MustParse("-1"),
	}}}
	tests := []struct {
		name  corev1.ResourceName
		want  int64
		ok    bool
		error bool
	}{
		{name: "x/n", want: 4, ok: true},
		{name: "x/none"},
		{name: "x/frac", error: true},
		{name: "x/neg", error: true},
	}
	for _, tt := range tests {
		n, ok, err := WholeCapacity(node, tt.name)
		if n != tt.want || ok != tt.ok || (err != nil) != tt.error {
			t.Errorf("%s: %d, %v, %v; want %d, %v (error %v)", tt.name, n, ok, err, tt.want, tt.ok, tt.error)
		}
	}
}
