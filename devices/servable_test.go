package devices_test

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/amd"
	"github.com/hami-scheduler/hami-scheduler/devices/ascend"
	"github.com/hami-scheduler/hami-scheduler/devices/devicestest"
	"github.com/hami-scheduler/hami-scheduler/devices/enflame"
	"github.com/hami-scheduler/hami-scheduler/devices/hygon"
)

// TestCheckServable: the shapes each vendor's published device plugin
// cannot serve are refused with an UnservableError naming the plugin, by
// the registry's ParsePod (as the webhook and PreFilter call it); the
// shapes it serves pass, and HAMi's own reading of the request (the
// vendor's ParsePod) is not changed.
func TestCheckServable(t *testing.T) {
	reg := registry(t)
	limits := devicestest.Limits
	withInit := func(p *corev1.Pod, init corev1.Container) *corev1.Pod {
		p.Spec.InitContainers = []corev1.Container{init}
		return p
	}
	pod := func(cs ...corev1.Container) *corev1.Pod { return devicestest.Pod(nil, cs...) }
	tests := []struct {
		name       string
		pod        *corev1.Pod
		wantPlugin string
		wantErr    string
	}{
		{name: "AMD: one container", pod: pod(limits("a", "amd.com/gpu", "2"), limits("b"))},
		{name: "AMD: two containers", pod: pod(limits("a", "amd.com/gpu", "1"), limits("b", "amd.com/gpu", "1")),
			wantPlugin: amd.PluginVersion, wantErr: "containers a, b each ask amd.com/gpu"},
		{name: "AMD: init and regular", pod: withInit(pod(limits("a", "amd.com/gpu", "1")), limits("i", "amd.com/gpu", "1")),
			wantPlugin: amd.PluginVersion, wantErr: "containers i, a"},
		{name: "AMD: init only", pod: withInit(pod(limits("a")), limits("i", "amd.com/gpu", "1"))},
		{name: "Ascend: two containers", pod: pod(limits("a", "huawei.com/Ascend910B4", "1"), limits("b", "huawei.com/Ascend910B4", "1")),
			wantPlugin: ascend.PluginVersion, wantErr: "one Ascend910B4 NPU container"},
		{name: "Ascend: one container of each of two chips", pod: pod(limits("a", "huawei.com/Ascend910B4", "1"), limits("b", "huawei.com/Ascend310P", "1"))},
		{name: "Hygon: two containers are served", pod: pod(limits("a", "hygon.com/dcunum", "1"), limits("b", "hygon.com/dcunum", "1"))},
		{name: "DRS: one container", pod: pod(limits("a", "enflame.com/drs-gcu", "3"))},
		{name: "DRS: memory without slices", pod: pod(limits("a", "enflame.com/gcu-memory", "10")),
			wantPlugin: enflame.PluginVersion, wantErr: "without enflame.com/drs-gcu"},
		{name: "DRS: init container", pod: withInit(pod(limits("a")), limits("i", "enflame.com/drs-gcu", "1")),
			wantPlugin: enflame.PluginVersion, wantErr: "init container i"},
		{name: "DRS: two containers", pod: pod(limits("a", "enflame.com/drs-gcu", "1"), limits("b", "enflame.com/drs-gcu", "1")),
			wantPlugin: enflame.PluginVersion, wantErr: "card of the pod's first"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := reg.ParsePod(tt.pod)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ParsePod() = %v, want nil", err)
				}
				return
			}
			unservable, ok := errors.AsType[*devices.UnservableError](err)
			if !ok || !strings.Contains(err.Error(), tt.wantErr) || unservable.Plugin != tt.wantPlugin {
				t.Fatalf("ParsePod() = %v, want an UnservableError of %s containing %q", err, tt.wantPlugin, tt.wantErr)
			}
			for _, v := range reg.Vendors() {
				if _, err := v.ParsePod(tt.pod); err != nil {
					t.Errorf("%s.ParsePod() = %v: HAMi's reading must not refuse it", v.Name(), err)
				}
			}
		})
	}
}

// registry is every vendor this test needs, with HAMi's chart names.
func registry(t *testing.T) *devices.Registry {
	t.Helper()
	var vendors []devices.Vendor
	add := func(v devices.Vendor, err error) {
		if err != nil {
			t.Fatal(err)
		}
		vendors = append(vendors, v)
	}
	add(amd.New(devices.Config{Name: "amd"}))
	add(hygon.New(devices.Config{Name: "hygon"}))
	add(enflame.NewDRS(devices.Config{Name: "enflame-drs"}))
	for _, c := range ascend.DefaultConfigs() {
		if c.CommonWord == "Ascend910B4" || c.CommonWord == "Ascend310P" {
			add(ascend.New(c))
		}
	}
	reg, err := devices.NewRegistry(vendors...)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}
