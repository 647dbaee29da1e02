package localcluster

import (
	"fmt"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"

	"github.com/hami-scheduler/hami-scheduler/manifests"
)

// ShippedFeatureGates returns the --feature-gates value the shipped
// Deployment (manifests/scheduler.yaml) passes to hami-scheduler, "" when
// it passes none.
func ShippedFeatureGates() (string, error) {
	deployment, err := shippedSchedulerDeployment()
	if err != nil {
		return "", err
	}
	c, err := schedulerContainer(deployment)
	if err != nil {
		return "", err
	}
	for _, arg := range append(c.Command, c.Args...) {
		if gates, ok := strings.CutPrefix(arg, "--feature-gates="); ok {
			return gates, nil
		}
	}
	return "", nil
}

// shippedSchedulerDeployment is the Deployment of manifests/scheduler.yaml.
func shippedSchedulerDeployment() (*appsv1.Deployment, error) {
	var deployment appsv1.Deployment
	if err := shippedObject(manifests.SchedulerYAML, "manifests/scheduler.yaml", "Deployment", &deployment); err != nil {
		return nil, err
	}
	return &deployment, nil
}

// schedulerContainer is the Deployment's hami-scheduler container.
func schedulerContainer(deployment *appsv1.Deployment) (*corev1.Container, error) {
	for i, c := range deployment.Spec.Template.Spec.Containers {
		if c.Name == "hami-scheduler" {
			return &deployment.Spec.Template.Spec.Containers[i], nil
		}
	}
	return nil, fmt.Errorf("Deployment %s has no hami-scheduler container", deployment.Name)
}

var setFeatureGates = sync.OnceValue(func() error {
	gates, err := ShippedFeatureGates()
	if err != nil || gates == "" {
		return err
	}
	if err := utilfeature.DefaultMutableFeatureGate.Set(gates); err != nil {
		return fmt.Errorf("manifests/scheduler.yaml --feature-gates=%s: %w", gates, err)
	}
	return nil
})

// applyShippedFeatureGates sets, once per process, the feature gates the
// shipped Deployment sets, so that the in-process schedulers run as
// hami-scheduler does in a cluster. The gates are process-wide: the
// default-scheduler profile of the same process runs with them too.
func applyShippedFeatureGates() error { return setFeatureGates() }
