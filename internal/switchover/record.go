package switchover

import (
	"encoding/json"
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RecordAnnotation is the annotation on HAMi's scheduler Deployment that
// holds what the switch changed (a Record as JSON), so that the way back
// restores exactly that. The switch writes it before its first change;
// the way back removes it after its last.
const RecordAnnotation = "hami.io/switch-record"

// recordVersion is the Record format written; a record of another version
// is refused.
const recordVersion = 1

// Record is what the switch found before it changed anything.
type Record struct {
	Version    int         `json:"version"`
	SwitchedAt metav1.Time `json:"switchedAt"`
	// SchedulerName is the name HAMi's scheduler and both webhooks give
	// device pods.
	SchedulerName string `json:"schedulerName"`
	// Replicas is HAMi's scheduler Deployment's spec.replicas.
	Replicas int32 `json:"replicas"`
	// WebhookConfiguration is HAMi's MutatingWebhookConfiguration as it
	// was (its name, labels, annotations and webhooks); absent when HAMi's
	// release had none (scheduler.admissionWebhook.enabled=false).
	WebhookConfiguration *admissionv1.MutatingWebhookConfiguration `json:"webhookConfiguration,omitempty"`
	// HAMiScheduler is hami-scheduler's Deployment as found.
	HAMiScheduler DeploymentRef `json:"hamiScheduler"`
}

// DeploymentRef names a Deployment and the replicas it had.
type DeploymentRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Replicas  int32  `json:"replicas"`
}

// readRecord returns the Deployment's record, nil if it has none.
func readRecord(d *appsv1.Deployment) (*Record, error) {
	raw, ok := d.Annotations[RecordAnnotation]
	if !ok {
		return nil, nil
	}
	var r Record
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return nil, fmt.Errorf("Deployment %s/%s: annotation %s: %w", d.Namespace, d.Name, RecordAnnotation, err)
	}
	if r.Version != recordVersion {
		return nil, fmt.Errorf("Deployment %s/%s: annotation %s: version %d, this kubectl-hami reads version %d", d.Namespace, d.Name, RecordAnnotation, r.Version, recordVersion)
	}
	return &r, nil
}

// encode is the record as the annotation's value.
func (r *Record) encode() (string, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("encode switch record: %w", err)
	}
	return string(b), nil
}

// keptWebhookConfiguration is the part of a MutatingWebhookConfiguration
// that re-creates it: no UID, resource version, timestamps or managed
// fields.
func keptWebhookConfiguration(c *admissionv1.MutatingWebhookConfiguration) *admissionv1.MutatingWebhookConfiguration {
	if c == nil {
		return nil
	}
	return &admissionv1.MutatingWebhookConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        c.Name,
			Labels:      c.Labels,
			Annotations: c.Annotations,
		},
		Webhooks: c.Webhooks,
	}
}
