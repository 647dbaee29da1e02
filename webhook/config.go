package webhook

import (
	"errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// DefaultSchedulerName is the scheduler the webhook hands device pods to.
const DefaultSchedulerName = "hami-scheduler"

// MutatePath is the URL path the webhook serves.
const MutatePath = "/mutate-pods"

// Config is how the admission rules behave.
type Config struct {
	// SchedulerName is written into spec.schedulerName of every pod that
	// asks for a managed device.
	SchedulerName string
	// TakeOverDefaultScheduler lets the webhook move pods that name
	// default-scheduler to SchedulerName. Pods naming no scheduler are
	// always handled; pods naming any other scheduler are never touched.
	TakeOverDefaultScheduler bool
	// Registry holds the enabled vendors; it must be built from the same
	// vendor configuration as the scheduler plugin's, so that both read the
	// same resource names and defaults.
	Registry *devices.Registry
}

// Validate reports a configuration the webhook cannot run with.
func (c Config) Validate() error {
	if c.Registry == nil || len(c.Registry.Vendors()) == 0 {
		return errors.New("no device vendor is enabled")
	}
	if c.SchedulerName == "" {
		return errors.New("scheduler name is empty")
	}
	if c.SchedulerName == corev1.DefaultSchedulerName {
		return errors.New("scheduler name must not be " + corev1.DefaultSchedulerName + ": device pods would never reach hami-scheduler")
	}
	if errs := validation.IsDNS1123Subdomain(c.SchedulerName); len(errs) > 0 {
		return errors.New("scheduler name " + c.SchedulerName + ": " + errs[0])
	}
	return nil
}
