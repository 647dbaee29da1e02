package localcluster

import (
	"fmt"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"

	"github.com/hami-scheduler/hami-scheduler/manifests"
)

// ShippedFeatureGates returns the --feature-gates value the shipped
// Deployment (manifests/scheduler.yaml) passes to hami-scheduler, "" when
// it passes none.
func ShippedFeatureGates() (string, error) {
	var deployment appsv1.Deployment
	if err := shippedObject(manifests.SchedulerYAML, "manifests/scheduler.yaml", "Deployment", &deployment); err != nil {
		return "", err
	}
	for _, c := range deployment.Spec.Template.Spec.Containers {
		if c.Name != "hami-scheduler" {
			continue
		}
		for _, arg := range append(c.Command, c.Args...) {
			if gates, ok := strings.CutPrefix(arg, "--feature-gates="); ok {
				return gates, nil
			}
		}
		return "", nil
	}
	return "", fmt.Errorf("manifests/scheduler.yaml: Deployment has no hami-scheduler container")
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
