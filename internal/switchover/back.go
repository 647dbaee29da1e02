package switchover

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"
)

// Back undoes Switch from its record on HAMi's scheduler Deployment, in
// the reverse order: hami-scheduler scaled to 0 and its last pod gone,
// HAMi's scheduler back to its recorded replicas and ready (its webhook
// server with it), HAMi's MutatingWebhookConfiguration re-created as
// recorded, the record removed. hami-scheduler's webhook is left as it was
// before the switch (registered): it gives device pods the same scheduler
// name as HAMi's. With o.DryRun it prints the steps and takes none.
func Back(ctx context.Context, client kubernetes.Interface, o Options) error {
	return direction{check: checkBack, steps: backSteps, notes: backNotes}.do(ctx, client, o)
}

// checkBack refuses when there is no record to go back to.
func checkBack(_ context.Context, _ kubernetes.Interface, _ Options, s *state) error {
	if s.record == nil {
		return fmt.Errorf("Deployment %s has no annotation %s: there is no switch to undo", key(s.hami.scheduler), RecordAnnotation)
	}
	return nil
}

// backSteps are the changes from the state found to HAMi's as recorded.
func backSteps(client kubernetes.Interface, o Options, s *state) []step {
	r, h := s.record, s.hami
	var steps []step
	if s.oursRunning() {
		steps = append(steps, stopStep(client, o, s.ours, "hami-scheduler: it stops before HAMi's starts, so that one scheduler places pods at a time"))
	}
	if r.Replicas > 0 {
		steps = append(steps, startStep(client, o, h.scheduler, r.Replicas, "HAMi's scheduler, and its webhook server"))
	}
	if r.WebhookConfiguration != nil && h.webhook == nil {
		steps = append(steps, restoreWebhookStep(client, r.WebhookConfiguration))
	}
	return append(steps, forgetStep(client, h.scheduler))
}
