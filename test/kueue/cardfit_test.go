package kueue

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hami-scheduler/hami-scheduler/cardfit"
	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/scheduler/profile"
)

// The case: 8 pods of 30,000 MiB fit Kueue's totals of 8 x 40 GiB
// cards, but every card has only 20,000 MiB free. The check sends the
// Job's workload back, naming the memory, again and again, and Kueue
// never admits it; once the cards free up it is admitted and its 8 pods
// run on hami-scheduler.
func TestFragmentedCardsHoldTheJobBack(t *testing.T) {
	e := newEnv(t, "kueue-fragmented")
	e.addNodes("1 node x 8 cards of NVIDIA A100 40 GiB")
	e.queue(8, checkName)
	// Pods outside Kueue take 20,960 MiB of every card (one per card: two
	// do not fit on one).
	for i := range 8 {
		e.pod(fmt.Sprintf("filler-%d", i), card{count: 1, memory: 20960}, false)
	}
	e.waitRunning("!"+queueLabel, 8)

	w := e.watchWorkloads()
	e.job("train", 8, card{count: 1, memory: 30000})
	first := e.until(w, "train", "the check sends the workload back", checkIs("Retry"), admitted)
	msg, _ := first.check["message"].(string)
	for _, want := range []string{"0 of 8 pods fit", "30000 MiB", "insufficient memory"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Retry message %q does not say %q", msg, want)
		}
	}
	// Kueue tries again after the back-off; the check answers the same.
	e.until(w, "train", "the check sends the workload back again", func(s workloadState) bool {
		return checkIs("Retry")(s) && s.check["retryCount"] != nil
	}, admitted)

	for i := range 8 {
		if err := controlPlane.Client.CoreV1().Pods(e.ns).Delete(e.ctx, fmt.Sprintf("filler-%d", i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.until(w, "train", "the workload is admitted once the cards are free", admitted, nil)
	pods := e.waitRunning("job-name=train", 8)
	for _, p := range pods {
		checkOnHAMi(t, &p)
	}
}

// A Job whose pods fit is admitted at once and its pods run; so does a
// plain pod queued through Kueue's pod integration. Both ask fractions of
// cards, and both are routed to hami-scheduler by its webhook.
func TestJobAndPodsRun(t *testing.T) {
	e := newEnv(t, "kueue-run")
	e.addNodes("1 node x 4 cards of NVIDIA A100 40 GiB")
	e.queue(4, checkName)
	w := e.watchWorkloads()
	e.job("fits", 2, card{count: 1, memory: 10000, cores: 30})
	ready := e.until(w, "fits", "the check passes the Job's workload", checkIs("Ready"), checkIs("Retry"))
	if msg, _ := ready.check["message"].(string); !strings.Contains(msg, "all 2 pods fit") {
		t.Errorf("Ready message %q", msg)
	}
	for _, p := range e.waitRunning("job-name=fits", 2) {
		checkOnHAMi(t, &p)
		if p.Annotations[cardfit.WorkloadAnnotation] != ready.name {
			t.Errorf("pod %s: %s = %q, want the workload %s (the check's podSetUpdates)", p.Name, cardfit.WorkloadAnnotation, p.Annotations[cardfit.WorkloadAnnotation], ready.name)
		}
	}

	e.pod("single", card{count: 1, memory: 8000}, true)
	e.until(w, "single", "the plain pod's workload is admitted", admitted, checkIs("Retry"))
	pods := e.waitRunning(queueLabel, 1)
	checkOnHAMi(t, &pods[0])
}

// checkOnHAMi checks that hami-scheduler placed the pod: its scheduler
// and HAMi's assignment annotations.
func checkOnHAMi(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if p.Spec.SchedulerName != profile.SchedulerName {
		t.Errorf("pod %s: schedulerName %q, want %s", p.Name, p.Spec.SchedulerName, profile.SchedulerName)
	}
	if p.Annotations[devices.AssignedNode] != p.Spec.NodeName {
		t.Errorf("pod %s on %s: %s = %q", p.Name, p.Spec.NodeName, devices.AssignedNode, p.Annotations[devices.AssignedNode])
	}
}
