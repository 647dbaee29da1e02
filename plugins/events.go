package plugins

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// HAMi v2.10's pod event reasons (pkg/scheduler/event.go).
const (
	EventFilteringSucceed = "FilteringSucceed"
	EventFilteringFailed  = "FilteringFailed"
	EventBindingSucceed   = "BindingSucceed"
	EventBindingFailed    = "BindingFailed"
)

// maxEventNote bounds an event's message: the events API refuses notes
// over 1 kB.
const maxEventNote = 1000

func truncateNote(s string) string {
	if len(s) <= maxEventNote {
		return s
	}
	return s[:maxEventNote-3] + "..."
}

// event records a HAMi event on the pod.
func (p *Plugin) event(pod *corev1.Pod, eventType, reason, action, note string) {
	if rec := p.handle.EventRecorder(); rec != nil {
		rec.Eventf(pod, nil, eventType, reason, action, "%s", truncateNote(note))
	}
}

// filteringSucceeded records HAMi's FilteringSucceed once the scheduler has
// chosen node: how many nodes this plugin turned away, and the score of
// each node it found fit (HAMi's node score, before normalisation); only
// when successEvents is on.
func (p *Plugin) filteringSucceeded(pod *corev1.Pod, s *cycleState, node string) {
	if !p.args.SuccessEvents || p.handle.EventRecorder() == nil {
		return
	}
	rejected := s.rejections.count()
	type nodeScore struct {
		name  string
		score float32
	}
	s.mu.Lock()
	fits := make([]nodeScore, 0, len(s.fits))
	for name, f := range s.fits {
		fits = append(fits, nodeScore{name, f.score})
	}
	s.mu.Unlock()
	slices.SortFunc(fits, func(a, b nodeScore) int { return strings.Compare(a.name, b.name) })
	var b strings.Builder
	fmt.Fprintf(&b, "find fit node(%s), %d nodes not fit, %d nodes fit(", node, rejected, len(fits))
	for i, f := range fits {
		if b.Len() > maxEventNote {
			// Reserve is on the scheduling cycle's path: stop at the limit.
			break
		}
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s:%.2f", f.name, f.score)
	}
	b.WriteByte(')')
	p.event(pod, corev1.EventTypeNormal, EventFilteringSucceed, "Scheduling", b.String())
}

// filteringFailedNote renders the rejections as HAMi's FilteringFailed
// messages in one event: "no available node, <N> nodes do not meet: " then
// "<n> nodes <reason>(<node> [<detail>],...)" per reason, sorted, joined by
// "; ". HAMi records one event per reason and then the total; the events
// API folds events of the same reason on the same pod into a series that
// keeps only the first message, so this is one event, total first so that
// truncation keeps it. "" without rejections.
func filteringFailedNote(rejections map[string]nodeRejection) string {
	if len(rejections) == 0 {
		return ""
	}
	byReason := map[string][]string{}
	for node, r := range rejections {
		entry := node
		if r.detail != "" && r.detail != r.reason {
			entry += " [" + r.detail + "]"
		}
		byReason[r.reason] = append(byReason[r.reason], entry)
	}
	reasons := make([]string, 0, len(byReason))
	for r := range byReason {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	parts := make([]string, 0, len(reasons))
	for _, r := range reasons {
		nodes := byReason[r]
		sort.Strings(nodes)
		parts = append(parts, fmt.Sprintf("%d nodes %s(%s)", len(nodes), r, strings.Join(nodes, ",")))
	}
	return fmt.Sprintf("no available node, %d nodes do not meet: %s", len(rejections), strings.Join(parts, "; "))
}

// bindingFailed records HAMi's BindingFailed with the error's text.
func (p *Plugin) bindingFailed(pod *corev1.Pod, err error) {
	p.event(pod, corev1.EventTypeWarning, EventBindingFailed, "Binding", err.Error())
}
