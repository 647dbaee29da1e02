package switchover

import (
	"fmt"
	"io"
)

// report prints what was found.
func (s *state) report(out io.Writer) {
	h := s.hami
	fmt.Fprintf(out, "HAMi's release %s in namespace %s:\n", h.release, h.namespace)
	fmt.Fprintf(out, "  scheduler: Deployment %s, %d replicas, %d pods, scheduler name %q\n",
		key(h.scheduler), replicas(h.scheduler), s.hamiPods, h.schedulerName)
	if h.webhook != nil {
		policy := "unset"
		if len(h.webhook.Webhooks) > 0 && h.webhook.Webhooks[0].FailurePolicy != nil {
			policy = string(*h.webhook.Webhooks[0].FailurePolicy)
		}
		fmt.Fprintf(out, "  webhook: MutatingWebhookConfiguration %s (failurePolicy %s)\n", h.webhookName, policy)
	} else {
		fmt.Fprintf(out, "  webhook: none (no MutatingWebhookConfiguration %s)\n", h.webhookName)
	}
	fmt.Fprintf(out, "  kept as they are: %s, and every pod\n", s.kept())
	if s.record != nil {
		fmt.Fprintf(out, "  switch record: of %s (annotation %s)\n", s.record.SwitchedAt.UTC().Format("2006-01-02 15:04:05 MST"), RecordAnnotation)
	}
	if s.ours != nil {
		fmt.Fprintf(out, "hami-scheduler: Deployment %s, %d replicas, %d pods\n", key(s.ours), replicas(s.ours), s.ourPods)
	} else {
		fmt.Fprintln(out, "hami-scheduler: no Deployment")
	}
	if s.probedIn != "" {
		fmt.Fprintf(out, "hami-scheduler's webhook gives device pods %q (a dry-run device pod in namespace %s)\n", h.schedulerName, s.probedIn)
	}
	fmt.Fprintf(out, "Unbound pods naming %q: %d (kept: the scheduler that runs places them)\n", h.schedulerName, s.unbound)
}

// kept names HAMi's objects that the switch never touches.
func (s *state) kept() string {
	h := s.hami
	kept := ""
	if h.devicePlugin != "" {
		kept += fmt.Sprintf("DaemonSet %s/%s, ", h.namespace, h.devicePlugin)
	}
	if h.deviceConfigMap != "" {
		kept += fmt.Sprintf("ConfigMap %s/%s, ", h.namespace, h.deviceConfigMap)
	}
	return kept + "HAMi's Services and its other ConfigMaps"
}

// switchNotes say how to keep the switch across helm upgrades, and the
// way back.
func switchNotes(out io.Writer, o Options, s *state) {
	h := s.hami
	if !o.DryRun {
		fmt.Fprintf(out, "Switched: hami-scheduler places the pods naming %q.\n", h.schedulerName)
	}
	fmt.Fprintf(out, `
A helm upgrade of HAMi's release brings its scheduler and webhook back, and both schedulers
would then place the same pods. Keep them off with HAMi's chart values:
    helm upgrade %s <HAMi's chart> -n %s --reuse-values \
      --set scheduler.replicas=0 --set scheduler.admissionWebhook.enabled=false
`, o.HAMiRelease, h.namespace)
	if !h.leaderElect {
		fmt.Fprintln(out, "    (HAMi's chart ignores scheduler.replicas while scheduler.leaderElect is false: add --set scheduler.leaderElect=true)")
	}
	fmt.Fprintf(out, `or run this command again after each upgrade of HAMi's release. hami-scheduler's own
release must not set scheduler.replicas=0 any more.
Back to HAMi: kubectl hami switch --back --hami-namespace %s --hami-release %s
`, h.namespace, o.HAMiRelease)
}

// backNotes say which values to undo.
func backNotes(out io.Writer, o Options, s *state) {
	if !o.DryRun {
		fmt.Fprintf(out, "Switched back: HAMi's scheduler places the pods naming %q.\n", s.record.SchedulerName)
	}
	fmt.Fprintf(out, `
If HAMi's release was upgraded with scheduler.replicas=0 or scheduler.admissionWebhook.enabled=false,
upgrade it without them (--set scheduler.replicas=%d --set scheduler.admissionWebhook.enabled=true), and
hami-scheduler's with --set scheduler.replicas=0. hami-scheduler's webhook may stay: it gives device pods
the same scheduler name as HAMi's.
`, s.record.Replicas)
}
