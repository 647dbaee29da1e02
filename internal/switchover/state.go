package switchover

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// state is what the switch found, before it changes anything.
type state struct {
	hami *hamiRelease
	// record is the switch record on HAMi's scheduler Deployment, nil if
	// there is none.
	record *Record
	// ours is hami-scheduler's Deployment, nil if it does not exist.
	ours     *appsv1.Deployment
	hamiPods int
	ourPods  int
	// unbound is the number of pods, not terminated, that name the
	// scheduler and are not bound yet.
	unbound int
	// probedIn is the namespace where a dry-run device pod showed
	// hami-scheduler's webhook admitting device pods; "" if not probed.
	probedIn string
}

// observe reads HAMi's release, its switch record, hami-scheduler's
// Deployment and the pods that concern them. Only reads.
func observe(ctx context.Context, client kubernetes.Interface, o Options) (*state, error) {
	h, err := findHAMi(ctx, client, o.HAMiNamespace, o.HAMiRelease)
	if err != nil {
		return nil, err
	}
	s := &state{hami: h}
	if s.record, err = readRecord(h.scheduler); err != nil {
		return nil, err
	}
	ns, name := o.Namespace, o.Deployment
	if s.record != nil {
		ns, name = s.record.HAMiScheduler.Namespace, s.record.HAMiScheduler.Name
	}
	if s.ours, err = optional(client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})); err != nil {
		return nil, fmt.Errorf("hami-scheduler's Deployment %s/%s: %w", ns, name, err)
	}
	if s.hamiPods, err = podCount(ctx, client, h.scheduler); err != nil {
		return nil, err
	}
	if s.ours != nil {
		if s.ourPods, err = podCount(ctx, client, s.ours); err != nil {
			return nil, err
		}
	}
	if s.unbound, err = unboundPods(ctx, client, h.schedulerName); err != nil {
		return nil, err
	}
	return s, nil
}

// unboundPods counts the pods of every namespace that name the scheduler,
// are not bound and have not terminated.
func unboundPods(ctx context.Context, client kubernetes.Interface, schedulerName string) (int, error) {
	selector := fields.Set{"spec.schedulerName": schedulerName, "spec.nodeName": ""}.AsSelector().String()
	pods, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		return 0, fmt.Errorf("list unbound pods naming %s: %w", schedulerName, err)
	}
	n := 0
	for _, p := range pods.Items {
		// The API applies the field selector; this keeps the count right
		// where it does not (fake clients).
		if p.Spec.SchedulerName == schedulerName && p.Spec.NodeName == "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			n++
		}
	}
	return n, nil
}

// hamiRunning: HAMi's scheduler has replicas or pods left.
func (s *state) hamiRunning() bool { return replicas(s.hami.scheduler) > 0 || s.hamiPods > 0 }

// oursRunning: hami-scheduler has replicas or pods left.
func (s *state) oursRunning() bool {
	return s.ours != nil && (replicas(s.ours) > 0 || s.ourPods > 0)
}

// newRecord is the record of the state as found.
func (s *state) newRecord() *Record {
	return &Record{
		Version:              recordVersion,
		SwitchedAt:           metav1.Now(),
		SchedulerName:        s.hami.schedulerName,
		Replicas:             replicas(s.hami.scheduler),
		WebhookConfiguration: keptWebhookConfiguration(s.hami.webhook),
		HAMiScheduler:        DeploymentRef{Namespace: s.ours.Namespace, Name: s.ours.Name, Replicas: replicas(s.ours)},
	}
}
