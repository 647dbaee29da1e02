package switchover

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// key is namespace/name.
func key(d *appsv1.Deployment) string { return d.Namespace + "/" + d.Name }

// recordStep writes the record on HAMi's scheduler Deployment, unless one
// is there already (an earlier, interrupted switch: its record is the one
// that tells the state before).
func recordStep(client kubernetes.Interface, d *appsv1.Deployment, r *Record) step {
	what := fmt.Sprintf("record HAMi's scheduler replicas (%d) and webhook configuration in the annotation %s of Deployment %s",
		r.Replicas, RecordAnnotation, key(d))
	if r.Replicas == 0 {
		what += " (HAMi's scheduler is at 0 already: the way back leaves it there)"
	}
	return step{
		what: what,
		do: func(ctx context.Context) error {
			value, err := r.encode()
			if err != nil {
				return err
			}
			return updateDeployment(ctx, client, d.Namespace, d.Name, func(d *appsv1.Deployment) error {
				if _, ok := d.Annotations[RecordAnnotation]; ok {
					return nil
				}
				if d.Annotations == nil {
					d.Annotations = map[string]string{}
				}
				d.Annotations[RecordAnnotation] = value
				return nil
			})
		},
	}
}

// forgetStep removes the record.
func forgetStep(client kubernetes.Interface, d *appsv1.Deployment) step {
	return step{
		what: fmt.Sprintf("remove the annotation %s of Deployment %s", RecordAnnotation, key(d)),
		do: func(ctx context.Context) error {
			return updateDeployment(ctx, client, d.Namespace, d.Name, func(d *appsv1.Deployment) error {
				delete(d.Annotations, RecordAnnotation)
				return nil
			})
		},
	}
}

// stopStep scales the Deployment to 0 and waits until its last pod is
// gone; why says whose it is.
func stopStep(client kubernetes.Interface, o Options, d *appsv1.Deployment, why string) step {
	return step{
		what: fmt.Sprintf("scale Deployment %s (%s) to 0 and wait until its pods are gone", key(d), why),
		do: func(ctx context.Context) error {
			if err := scale(ctx, client, d.Namespace, d.Name, 0); err != nil {
				return err
			}
			return waitNoPods(ctx, client, o, d)
		},
	}
}

// startStep scales the Deployment to n and waits until a pod is ready.
func startStep(client kubernetes.Interface, o Options, d *appsv1.Deployment, n int32, why string) step {
	return step{
		what: fmt.Sprintf("scale Deployment %s (%s) to %d and wait until a pod is ready", key(d), why, n),
		do: func(ctx context.Context) error {
			if err := scale(ctx, client, d.Namespace, d.Name, n); err != nil {
				return err
			}
			return waitReady(ctx, client, o, d.Namespace, d.Name)
		},
	}
}

// deleteWebhookStep deletes HAMi's webhook configuration, the one read
// (same UID) and no later one.
func deleteWebhookStep(client kubernetes.Interface, c *admissionv1.MutatingWebhookConfiguration) step {
	return step{
		what: fmt.Sprintf("delete MutatingWebhookConfiguration %s, HAMi's webhook (hami-scheduler's admits device pods already)", c.Name),
		do: func(ctx context.Context) error {
			err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, c.Name, metav1.DeleteOptions{
				Preconditions: &metav1.Preconditions{UID: &c.UID},
			})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete MutatingWebhookConfiguration %s: %w", c.Name, err)
			}
			return nil
		},
	}
}

// restoreWebhookStep creates HAMi's webhook configuration as recorded.
func restoreWebhookStep(client kubernetes.Interface, c *admissionv1.MutatingWebhookConfiguration) step {
	return step{
		what: fmt.Sprintf("create MutatingWebhookConfiguration %s as recorded, HAMi's webhook", c.Name),
		do: func(ctx context.Context) error {
			_, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, c.DeepCopy(), metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create MutatingWebhookConfiguration %s: %w", c.Name, err)
			}
			return nil
		},
	}
}
