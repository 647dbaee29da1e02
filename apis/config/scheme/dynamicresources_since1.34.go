//go:build !k8s1.33 && !k8s1.30

package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	kubeschedulerv1 "k8s.io/kube-scheduler/config/v1"
	schedulerconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// DynamicResourcesArgsFrom is ArgsFrom for kube-scheduler's own
// DynamicResourcesArgs (kubescheduler.config.k8s.io/v1), which the
// HAMiDynamicResources plugin takes in place of the in-tree plugin.
func DynamicResourcesArgsFrom(obj runtime.Object) (*schedulerconfig.DynamicResourcesArgs, error) {
	return argsFrom[kubeschedulerv1.DynamicResourcesArgs, schedulerconfig.DynamicResourcesArgs](obj, kubeschedulerv1.SchemeGroupVersion.WithKind("DynamicResourcesArgs"))
}
