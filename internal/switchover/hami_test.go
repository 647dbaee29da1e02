package switchover

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestFindHAMi: HAMi's objects are named after its scheduler Deployment,
// found by the labels HAMi's chart gives it, whatever the release's name.
func TestFindHAMi(t *testing.T) {
	tests := []struct {
		name, release string
		objs          []runtime.Object
		want          hamiRelease
		wantErr       string
	}{{
		name: "release hami", release: "hami",
		objs: hamiObjects(1),
		want: hamiRelease{release: "hami", fullname: "hami", schedulerName: "hami-scheduler", leaderElect: true,
			webhookName: "hami-webhook", deviceConfigMap: "hami-scheduler-device", devicePlugin: "hami-device-plugin"},
	}, {
		name: "release vgpu: fullname vgpu-hami, no webhook, no device plugin", release: "vgpu",
		objs: []runtime.Object{hamiDeployment("vgpu", "vgpu-hami", 1, "gpu-scheduler")},
		want: hamiRelease{release: "vgpu", fullname: "vgpu-hami", schedulerName: "gpu-scheduler", leaderElect: true,
			webhookName: "vgpu-hami-webhook", deviceConfigMap: "vgpu-hami-scheduler-device"},
	}, {
		name: "flags as separate arguments, leader election off", release: "hami",
		objs: []runtime.Object{func() *appsv1.Deployment {
			d := hamiDeployment("hami", "hami", 1, "x")
			d.Spec.Template.Spec.Containers[1].Command = []string{"scheduler"}
			d.Spec.Template.Spec.Containers[1].Args = []string{"--scheduler-name", "hami-scheduler", "--leader-elect=false"}
			return d
		}()},
		want: hamiRelease{release: "hami", fullname: "hami", schedulerName: "hami-scheduler",
			webhookName: "hami-webhook", deviceConfigMap: "hami-scheduler-device"},
	}, {
		name: "two releases' labels on two Deployments", release: "hami",
		objs: []runtime.Object{hamiDeployment("hami", "hami", 1, "a"), func() *appsv1.Deployment {
			d := hamiDeployment("hami", "copy", 1, "a")
			d.UID = "other"
			return d
		}()},
		wantErr: "cannot tell which is HAMi's scheduler",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := newClient(t, "", tt.objs...)
			got, err := findHAMi(context.Background(), client, hamiNS, tt.release)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.want.namespace = hamiNS
			tt.want.scheduler, tt.want.webhook = got.scheduler, got.webhook
			if *got != tt.want {
				t.Errorf("found %+v\nwant  %+v", *got, tt.want)
			}
		})
	}
}

// TestUnboundPods counts the pods a scheduler has still to place.
func TestUnboundPods(t *testing.T) {
	pod := func(name, scheduler, node string, phase corev1.PodPhase) *corev1.Pod {
		p := podOf(ourDeployment(0), 0)
		p.Name, p.Spec.SchedulerName, p.Spec.NodeName, p.Status.Phase = name, scheduler, node, phase
		return p
	}
	client := newClient(t, "",
		pod("pending", "hami-scheduler", "", corev1.PodPending),
		pod("bound", "hami-scheduler", "n1", corev1.PodRunning),
		pod("other", "default-scheduler", "", corev1.PodPending),
		pod("failed", "hami-scheduler", "", corev1.PodFailed))
	n, err := unboundPods(context.Background(), client, "hami-scheduler")
	if err != nil || n != 1 {
		t.Errorf("unboundPods = %d, %v; want 1 (the pending one)", n, err)
	}
}
