package switchover

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// updateDeployment applies change to the Deployment's latest version,
// again on a conflict.
func updateDeployment(ctx context.Context, client kubernetes.Interface, namespace, name string, change func(*appsv1.Deployment) error) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := change(d); err != nil {
			return err
		}
		_, err = client.AppsV1().Deployments(namespace).Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("update Deployment %s/%s: %w", namespace, name, err)
	}
	return nil
}

// scale sets the Deployment's spec.replicas.
func scale(ctx context.Context, client kubernetes.Interface, namespace, name string, n int32) error {
	return updateDeployment(ctx, client, namespace, name, func(d *appsv1.Deployment) error {
		d.Spec.Replicas = &n
		return nil
	})
}

// podCount is the number of the Deployment's pods, terminating ones
// included (a terminating scheduler may still bind).
func podCount(ctx context.Context, client kubernetes.Interface, d *appsv1.Deployment) (int, error) {
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return 0, fmt.Errorf("Deployment %s/%s: selector: %w", d.Namespace, d.Name, err)
	}
	pods, err := client.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return 0, fmt.Errorf("list pods of Deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	return len(pods.Items), nil
}

// waitNoPods waits until the Deployment has no pod left, not even a
// terminating one.
func waitNoPods(ctx context.Context, client kubernetes.Interface, o Options, d *appsv1.Deployment) error {
	var left int
	err := wait.PollUntilContextTimeout(ctx, o.Interval, o.Timeout, true, func(ctx context.Context) (bool, error) {
		n, err := podCount(ctx, client, d)
		left = n
		return err == nil && n == 0, nil
	})
	if err != nil {
		return fmt.Errorf("Deployment %s/%s still has %d pods after %s: %w", d.Namespace, d.Name, left, o.Timeout, err)
	}
	return nil
}

// waitReady waits until the Deployment's controller has seen its latest
// spec and at least one pod is ready.
func waitReady(ctx context.Context, client kubernetes.Interface, o Options, namespace, name string) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, o.Interval, o.Timeout, true, func(ctx context.Context) (bool, error) {
		d, err := client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("%d of %d ready", d.Status.ReadyReplicas, replicas(d))
		return d.Status.ObservedGeneration >= d.Generation && d.Status.ReadyReplicas >= 1, nil
	})
	if err != nil {
		return fmt.Errorf("Deployment %s/%s has no ready pod after %s (%s): %w", namespace, name, o.Timeout, last, err)
	}
	return nil
}
