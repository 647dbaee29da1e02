package release

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// metricsFlag is hami-scheduler's plain metrics listener.
const metricsFlag = "--hami-metrics-bind-address="

// ServiceEndpoints are the addresses behind the named port of one of the
// release's Services, found as the cluster finds them: the Service's
// selector picks the pods of a Deployment by its pod template's labels,
// its targetPort (a number or a container port's name) is a port of the
// pod's container, and each running replica listens there. Only
// hami-scheduler's plain metrics listener (--hami-metrics-bind-address)
// is modelled; the replicas run on loopback ports of their own
// (SchedulerProcess.MetricsAddress), which is all that differs from a
// cluster.
func (r *Release) ServiceEndpoints(service, portName string) ([]string, error) {
	svc, err := r.service(service)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == portName })
	if i < 0 {
		return nil, fmt.Errorf("Service %s has no port %s", service, portName)
	}
	d, err := r.Deployment("hami-scheduler")
	if err != nil {
		return nil, err
	}
	if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
		return nil, fmt.Errorf("Service %s selects %v, not the pods of Deployment %s (%v)", service, svc.Spec.Selector, d.Name, d.Spec.Template.Labels)
	}
	c := &d.Spec.Template.Spec.Containers[0]
	port, err := containerPort(c, svc.Spec.Ports[i].TargetPort)
	if err != nil {
		return nil, fmt.Errorf("Service %s port %s: %w", service, portName, err)
	}
	if listen := metricsPort(append(slices.Clone(c.Command), c.Args...)); listen != port {
		return nil, fmt.Errorf("Service %s port %s targets container port %d, where hami-scheduler does not listen (its %s port is %d)", service, portName, port, strings.TrimSuffix(metricsFlag, "="), listen)
	}
	var addrs []string
	for _, s := range r.Schedulers {
		if !s.Exited() && s.MetricsAddress() != "" {
			addrs = append(addrs, s.MetricsAddress())
		}
	}
	return addrs, nil
}

// service is the rendered Service of the name.
func (r *Release) service(name string) (*corev1.Service, error) {
	o := r.object("Service", name)
	if o == nil {
		return nil, fmt.Errorf("the chart renders no Service %s", name)
	}
	svc := &corev1.Service{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, svc); err != nil {
		return nil, err
	}
	return svc, nil
}

// containerPort is the container's port a Service's targetPort names.
func containerPort(c *corev1.Container, target intstr.IntOrString) (int32, error) {
	if target.Type == intstr.Int {
		return target.IntVal, nil
	}
	for _, p := range c.Ports {
		if p.Name == target.StrVal {
			return p.ContainerPort, nil
		}
	}
	return 0, fmt.Errorf("container %s has no port named %s", c.Name, target.StrVal)
}

// metricsPort is the port the arguments' plain metrics listener binds,
// 0 when none.
func metricsPort(args []string) int32 {
	for _, a := range args {
		if addr, ok := strings.CutPrefix(a, metricsFlag); ok {
			i := strings.LastIndex(addr, ":")
			if p, err := strconv.ParseInt(addr[i+1:], 10, 32); err == nil && i >= 0 {
				return int32(p)
			}
		}
	}
	return 0
}
