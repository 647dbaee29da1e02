// Package manifests embeds the YAML that ships, so that hami-local and the
// end-to-end tests register exactly what a cluster applies (patching only
// the webhook's URL and CA) instead of a hand-built copy that can drift.
package manifests

import (
	_ "embed"
)

// WebhookYAML is manifests/webhook.yaml: the webhook's RBAC, Deployment,
// Service and MutatingWebhookConfiguration.
//
//go:embed webhook.yaml
var WebhookYAML []byte

// SchedulerYAML is manifests/scheduler.yaml: hami-scheduler's RBAC,
// ConfigMap and Deployment (whose flags the in-process schedulers follow).
//
//go:embed scheduler.yaml
var SchedulerYAML []byte

// SchedulerConfigYAML is manifests/scheduler-config.yaml: hami-scheduler's
// KubeSchedulerConfiguration.
//
//go:embed scheduler-config.yaml
var SchedulerConfigYAML []byte

// AdmissionPolicyYAML is manifests/admission-policy.yaml: the
// ValidatingAdmissionPolicy that keeps tenants from forging HAMi's
// scheduling annotations.
//
//go:embed admission-policy.yaml
var AdmissionPolicyYAML []byte

// PodGroupCRDYAML is manifests/podgroup-crd.yaml: the CustomResourceDefinition
// of scheduler-plugins' PodGroup (scheduling.x-k8s.io/v1alpha1), for the
// Coscheduling plugin.
//
//go:embed podgroup-crd.yaml
var PodGroupCRDYAML []byte
