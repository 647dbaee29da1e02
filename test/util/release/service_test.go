package release

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestServicePorts: a Service's targetPort, a number or a port's name,
// is a container port; the metrics listener's port is read from the
// arguments.
func TestServicePorts(t *testing.T) {
	c := &corev1.Container{Name: "hami-scheduler", Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9395}}}
	for _, tt := range []struct {
		target  intstr.IntOrString
		want    int32
		wantErr bool
	}{
		{target: intstr.FromInt32(9395), want: 9395},
		{target: intstr.FromString("metrics"), want: 9395},
		{target: intstr.FromString("monitor"), wantErr: true},
	} {
		got, err := containerPort(c, tt.target)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("containerPort(%v) = %d, %v; want %d, error %v", tt.target, got, err, tt.want, tt.wantErr)
		}
	}
	for _, tt := range []struct {
		args []string
		want int32
	}{
		{args: []string{"--v=2", "--hami-metrics-bind-address=:9395"}, want: 9395},
		{args: []string{"--hami-metrics-bind-address=0.0.0.0:9500"}, want: 9500},
		{args: []string{"--v=2"}, want: 0},
	} {
		if got := metricsPort(tt.args); got != tt.want {
			t.Errorf("metricsPort(%q) = %d, want %d", tt.args, got, tt.want)
		}
	}
}
