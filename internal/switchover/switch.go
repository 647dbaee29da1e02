package switchover

import (
	"cmp"
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"
)

// Switch hands device scheduling from HAMi's release to hami-scheduler:
//
//  1. it records HAMi's state on HAMi's scheduler Deployment;
//  2. it deletes HAMi's MutatingWebhookConfiguration, once a probe shows
//     hami-scheduler's webhook admits device pods (so none is admitted
//     unmutated), and before HAMi's webhook server, which runs in HAMi's
//     scheduler pod, goes;
//  3. it scales HAMi's scheduler to 0 and waits until its last pod is
//     gone;
//  4. only then it scales hami-scheduler up, so that the two never place
//     pods at the same time.
//
// It keeps HAMi's device plugin, its device ConfigMap and every pod. Every
// step looks at what is there, so running it again finishes an
// interrupted switch, or switches again after a helm upgrade of HAMi's
// release brought its scheduler and webhook back. With o.DryRun it prints
// the steps and takes none.
func Switch(ctx context.Context, client kubernetes.Interface, o Options) error {
	return direction{check: checkSwitch, steps: switchSteps, notes: switchNotes}.do(ctx, client, o)
}

// checkSwitch refuses what the switch cannot do safely: no hami-scheduler,
// or its webhook not giving device pods HAMi's scheduler name.
func checkSwitch(ctx context.Context, client kubernetes.Interface, o Options, s *state) error {
	if s.ours == nil {
		return fmt.Errorf("hami-scheduler's Deployment %s/%s does not exist: install hami-scheduler first beside HAMi's release, its scheduler at 0 replicas "+
			"(helm install ... -f values-beside-hami.yaml --set scheduler.replicas=0, docs/switching.md), or name it (--scheduler-namespace, --scheduler-deployment)", o.Namespace, o.Deployment)
	}
	if s.ours.UID == s.hami.scheduler.UID {
		return fmt.Errorf("Deployment %s is HAMi's scheduler, not hami-scheduler's (--scheduler-namespace, --scheduler-deployment)", key(s.ours))
	}
	if err := probeWebhook(ctx, client, o, s.hami.schedulerName); err != nil {
		return err
	}
	s.probedIn = o.ProbeNamespace
	return nil
}

// switchSteps are the changes from the state found to hami-scheduler
// scheduling alone.
func switchSteps(client kubernetes.Interface, o Options, s *state) []step {
	h, ours := s.hami, s.ours
	var steps []step
	if s.record == nil {
		steps = append(steps, recordStep(client, h.scheduler, s.newRecord()))
	}
	if h.webhook != nil {
		steps = append(steps, deleteWebhookStep(client, h.webhook))
	}
	hamiRunning, oursRunning := s.hamiRunning(), s.oursRunning()
	if hamiRunning && oursRunning {
		steps = append(steps, stopStep(client, o, ours, "hami-scheduler, running beside HAMi's: it stops first, so that one scheduler places pods at a time"))
	}
	if hamiRunning {
		steps = append(steps, stopStep(client, o, h.scheduler, "HAMi's scheduler, and its webhook server"))
	}
	if hamiRunning || replicas(ours) == 0 {
		n := cmp.Or(replicas(ours), o.Replicas)
		steps = append(steps, startStep(client, o, ours, n, "hami-scheduler"))
	}
	return steps
}
