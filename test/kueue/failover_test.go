package kueue

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
)

// The check's promises are in the API: a new leader after a failover
// holds the cards of a workload the old leader passed whose pods are not
// placed yet, and sends back a workload that would take them. A second
// admission check, answered by the test, keeps the first workload from
// being admitted (so its pods are not created) until the test lets it.
func TestPromisesSurviveFailover(t *testing.T) {
	e := newEnv(t, "kueue-failover")
	e.addNodes("1 node x 2 cards of NVIDIA A100 40 GiB")
	hold := "hold-" + e.ns
	e.create("admissionchecks", false, map[string]any{"kind": "AdmissionCheck", "metadata": map[string]any{"name": hold},
		"spec": map[string]any{"controllerName": "e2e.hami.io/hold"}})
	e.applyStatus("admissionchecks", hold, "AdmissionCheck", map[string]any{"conditions": []any{map[string]any{
		"type": "Active", "status": "True", "reason": "Active", "message": "the test answers it", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
	}}})
	// Quota for more than the cards: Kueue alone would admit both.
	e.queue(4, checkName, hold)

	// Two replicas with leader election instead of the suite's scheduler.
	sched.Stop()
	replicas := map[string]*localcluster.Scheduler{}
	for _, id := range []string{"a", "b"} {
		s, err := localcluster.StartScheduler(e.ctx, controlPlane.Config, localcluster.SchedulerOptions{
			CardFit: &checkOptions,
			LeaderElection: &localcluster.LeaderElection{Identity: id, Namespace: e.ns, Name: "hami-scheduler",
				LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 250 * time.Millisecond},
		})
		if err != nil {
			t.Fatal(err)
		}
		replicas[id] = s
	}
	t.Cleanup(func() {
		for _, s := range replicas {
			s.Stop()
		}
		var err error
		if sched, err = localcluster.StartScheduler(context.Background(), controlPlane.Config, localcluster.SchedulerOptions{CardFit: &checkOptions}); err != nil {
			t.Fatal(err)
		}
	})
	var leader string
	e.eventually("a leader", func() (bool, string) {
		for id, s := range replicas {
			if s.Leading() {
				leader = id
			}
		}
		return leader != "", ""
	})

	w := e.watchWorkloads()
	e.job("first", 2, card{count: 1, memory: 30000})
	first := e.until(w, "first", "the leader passes the first workload", checkIs("Ready"), checkIs("Retry"))

	// The leader goes without handing over; the other takes the lease.
	replicas[leader].Stop()
	delete(replicas, leader)
	for _, s := range replicas {
		e.eventually("the other replica leads", func() (bool, string) { return s.Leading(), "" })
	}
	e.job("second", 1, card{count: 1, memory: 30000})
	second := e.until(w, "second", "the new leader sends the second workload back", checkIs("Retry"), checkIs("Ready"))
	if msg, _ := second.check["message"].(string); !strings.Contains(msg, "2 pods of 1 workloads passed before and not placed yet are counted") {
		t.Errorf("Retry message %q does not count the first workload's promise", msg)
	}

	// The hold lifted, the first workload is admitted and its pods run.
	e.applyStatus("workloads", first.name, "Workload", map[string]any{"admissionChecks": []any{map[string]any{
		"name": hold, "state": "Ready", "message": "released by the test", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
	}}})
	e.until(w, "first", "the first workload is admitted", admitted, nil)
	for _, p := range e.waitRunning("job-name=first", 2) {
		checkOnHAMi(t, &p)
	}
}

// applyStatus server-side applies status fields of a Kueue object of the
// test's (cluster-scoped for admissionchecks).
func (e *env) applyStatus(resource, name, kind string, status map[string]any) {
	e.t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind,
		"metadata": map[string]any{"name": name}, "status": status}}
	opts := metav1.ApplyOptions{FieldManager: "e2e-hold", Force: true}
	var err error
	if resource == "admissionchecks" {
		_, err = e.dyn.Resource(kueueGVR(resource)).ApplyStatus(e.ctx, name, u, opts)
	} else {
		u.SetNamespace(e.ns)
		_, err = e.dyn.Resource(kueueGVR(resource)).Namespace(e.ns).ApplyStatus(e.ctx, name, u, opts)
	}
	if err != nil {
		e.t.Fatalf("apply %s %s status: %v", resource, name, err)
	}
}
