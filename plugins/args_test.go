package plugins

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

func TestDecodeArgs(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		env     string
		want    func(*Args) bool
		wantErr string
	}{
		{name: "defaults", raw: "", want: func(a *Args) bool {
			return a.NodeSchedulerPolicy == devices.NodeBinpack && a.GPUSchedulerPolicy == devices.CardSpread &&
				a.NodeLockExpiry.Duration == 5*time.Minute && a.NodeLockWait.Duration == 30*time.Second &&
				len(a.Vendors) == 1 && a.Vendors[0].Name == "nvidia"
		}},
		{name: "yaml-style json values", raw: `{"nodeSchedulerPolicy":"spread","gpuSchedulerPolicy":"binpack","nodeLockExpiry":"2m","vendors":[{"name":"nvidia","defaultMemoryMiB":1024,"defaultCores":20}]}`,
			want: func(a *Args) bool {
				return a.NodeSchedulerPolicy == devices.NodeSpread && a.GPUSchedulerPolicy == devices.CardBinpack &&
					a.NodeLockExpiry.Duration == 2*time.Minute && a.Vendors[0].DefaultMemoryMiB == 1024
			}},
		{name: "expiry from HAMI_NODELOCK_EXPIRE", env: "90s", want: func(a *Args) bool { return a.NodeLockExpiry.Duration == 90*time.Second }},
		{name: "bad env", env: "soon", wantErr: "HAMI_NODELOCK_EXPIRE"},
		{name: "bad node policy", raw: `{"nodeSchedulerPolicy":"random"}`, wantErr: "nodeSchedulerPolicy"},
		{name: "bad gpu policy", raw: `{"gpuSchedulerPolicy":"random"}`, wantErr: "gpuSchedulerPolicy"},
		{name: "negative wait", raw: `{"nodeLockWait":"-1s"}`, wantErr: "nodeLockWait"},
		{name: "bad vendor default", raw: `{"vendors":[{"name":"nvidia","defaultCores":150}]}`, wantErr: "defaultCores"},
		{name: "not json", raw: `{`, wantErr: "decode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(nodeLockExpiryEnv, tt.env)
			var obj runtime.Object
			if tt.raw != "" {
				obj = &runtime.Unknown{Raw: []byte(tt.raw), ContentType: runtime.ContentTypeJSON}
			}
			args, err := decodeArgs(obj)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.want(args) {
				t.Errorf("args = %+v", args)
			}
		})
	}
}

func TestNewRejectsUnknownVendor(t *testing.T) {
	_, err := New(t.Context(), &runtime.Unknown{Raw: []byte(`{"vendors":[{"name":"acme"}]}`)}, &fakeHandle{})
	if err == nil || !strings.Contains(err.Error(), "acme") {
		t.Fatalf("err = %v, want one naming the vendor", err)
	}
	_ = metav1.Duration{}
}
