// Package switchover hands the scheduling of device pods from HAMi's
// scheduler extender and webhook (the Helm chart charts/hami of
// Project-HAMi/HAMi v2.10) to hami-scheduler, and back: `kubectl hami
// switch`. docs/switching.md describes the steps and why they come in
// this order.
package switchover

import (
	"cmp"
	"errors"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Defaults of Options. DefaultNamespace and DefaultDeployment are where
// docs/switching.md installs hami-scheduler beside HAMi's release: in
// hami-system, with the chart's values-beside-hami.yaml (fullnameOverride
// hami-framework, whose scheduler Deployment is hami-framework-scheduler).
const (
	DefaultHAMiRelease    = "hami"
	DefaultNamespace      = "hami-system"
	DefaultDeployment     = "hami-framework-scheduler"
	DefaultReplicas       = 2
	DefaultProbeNamespace = "default"
	DefaultProbeResource  = corev1.ResourceName("nvidia.com/gpu")
	DefaultTimeout        = 5 * time.Minute
	DefaultInterval       = 500 * time.Millisecond
)

// Options say where HAMi's release and hami-scheduler are, and how to go.
type Options struct {
	// HAMiNamespace and HAMiRelease are the namespace and name of HAMi's
	// Helm release.
	HAMiNamespace string
	HAMiRelease   string
	// Namespace and Deployment name hami-scheduler's scheduler Deployment.
	Namespace  string
	Deployment string
	// Replicas is hami-scheduler's replica count after the switch when its
	// Deployment is at 0 (installed as a standby); one already running
	// keeps its own.
	Replicas int32
	// ProbeNamespace is where the webhook probe, a server-side dry-run pod
	// asking ProbeResource, is sent; it must be a namespace
	// hami-scheduler's webhook serves.
	ProbeNamespace string
	ProbeResource  corev1.ResourceName
	// Timeout bounds each wait; Interval is the time between polls.
	Timeout  time.Duration
	Interval time.Duration
	// DryRun prints every change and makes none.
	DryRun bool
	// Out receives the report.
	Out io.Writer
}

// withDefaults fills the unset fields.
func (o Options) withDefaults() Options {
	o.HAMiRelease = cmp.Or(o.HAMiRelease, DefaultHAMiRelease)
	o.Namespace = cmp.Or(o.Namespace, DefaultNamespace)
	o.Deployment = cmp.Or(o.Deployment, DefaultDeployment)
	o.Replicas = cmp.Or(o.Replicas, DefaultReplicas)
	o.ProbeNamespace = cmp.Or(o.ProbeNamespace, DefaultProbeNamespace)
	o.ProbeResource = cmp.Or(o.ProbeResource, DefaultProbeResource)
	o.Timeout = cmp.Or(o.Timeout, DefaultTimeout)
	o.Interval = cmp.Or(o.Interval, DefaultInterval)
	if o.Out == nil {
		o.Out = io.Discard
	}
	return o
}

// validate checks what has no default.
func (o Options) validate() error {
	switch {
	case o.HAMiNamespace == "":
		return errors.New("HAMi's release namespace is not set (--hami-namespace)")
	case o.Replicas < 0:
		return errors.New("replicas must not be negative (--scheduler-replicas)")
	case o.Timeout < 0 || o.Interval < 0:
		return errors.New("timeout and interval must not be negative (--timeout)")
	}
	return nil
}
