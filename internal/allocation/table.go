package allocation

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// WriteTable prints, for people, which card each device pod got and how
// much of it, then every card's use and kind, then why pending device
// pods wait. vendors are those r was read with: a device pod asks for or
// holds cards of one of them (by annotation or by a claim).
func WriteTable(w io.Writer, vendors []devices.Vendor, r Report, pods []corev1.Pod) {
	gpuPods := make([]*corev1.Pod, 0, len(pods))
	for i := range pods {
		if asksForCards(vendors, &pods[i]) || len(r.Grants[pods[i].Namespace+"/"+pods[i].Name]) > 0 {
			gpuPods = append(gpuPods, &pods[i])
		}
	}
	sort.Slice(gpuPods, func(i, j int) bool {
		a, b := gpuPods[i], gpuPods[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tPOD\tPHASE\tNODE\tCONTAINER\tVENDOR\tCARD\tMEMORY\tCORES")
	var pending []*corev1.Pod
	for _, p := range gpuPods {
		grants := r.Grants[p.Namespace+"/"+p.Name]
		phase := string(p.Status.Phase)
		if p.DeletionTimestamp != nil {
			phase = "Terminating"
		}
		if len(grants) == 0 {
			node := p.Spec.NodeName
			if node == "" {
				node = "-"
				pending = append(pending, p)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t-\t-\t-\t-\t-\n", p.Namespace, p.Name, phase, node)
			continue
		}
		for _, g := range grants {
			card := shortUUID(g.UUID)
			if g.Index >= 0 {
				card = fmt.Sprintf("#%d %s", g.Index, card)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d MiB\t%d%%\n", p.Namespace, p.Name, phase, p.Spec.NodeName, g.Container, g.Vendor, card, g.MemoryMiB, g.Cores)
		}
	}
	_ = tw.Flush()

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tKIND\tVENDOR\tCARD\tUUID\tMODEL\tSHARES\tMEMORY (MiB)\tCORES\tPODS")
	for _, c := range r.Cards {
		flag := ""
		if c.Overcommitted() {
			flag = "  OVER-COMMITTED"
		}
		kind := c.Kind
		if c.AlsoDRA != "" {
			kind += "+" + c.AlsoDRA
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t#%d\t%s\t%s\t%d/%d\t%d/%d\t%d/%d\t%s%s\n", c.Node, kind, c.Vendor, c.Index, shortUUID(c.UUID), c.Model,
			c.Used.Sharers, c.Split, c.Used.MemoryMiB, c.MemoryMiB, c.Used.Cores, c.CoreTotal, uniqueNames(c.Pods), flag)
	}
	_ = tw.Flush()

	for _, p := range pending {
		fmt.Fprintf(w, "\n%s/%s is pending: %s", p.Namespace, p.Name, waitingReason(p))
	}
	if len(pending) > 0 {
		fmt.Fprintln(w)
	}
	unscheduled := Unscheduled(vendors, pods)
	for _, s := range unscheduled {
		fmt.Fprintf(w, "\nWARNING: %s", s)
	}
	if len(unscheduled) > 0 {
		fmt.Fprintln(w)
	}
	for _, s := range append(r.UnreadableNodes, r.PodProblems...) {
		fmt.Fprintf(w, "\nnot accounted: %s", s)
	}
	if len(r.UnreadableNodes)+len(r.PodProblems) > 0 {
		fmt.Fprintln(w)
	}
}

// asksForCards reports whether any container asks for cards of one of the
// vendors (their count resource) or the pod already holds some (carries
// their allocated annotation).
func asksForCards(vendors []devices.Vendor, p *corev1.Pod) bool {
	if _, ok := p.Annotations[devices.AssignmentRecord]; ok {
		return true
	}
	for _, v := range vendors {
		_, allocated := v.AssignmentAnnotations()
		if _, ok := p.Annotations[allocated]; ok {
			return true
		}
		count := v.Resources().Count
		for _, c := range devices.Containers(p) {
			if _, ok := c.Resources.Limits[count]; ok {
				return true
			}
			if _, ok := c.Resources.Requests[count]; ok {
				return true
			}
		}
	}
	return false
}

func waitingReason(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message != "" {
			return c.Message
		}
	}
	return "not scheduled yet"
}

// shortUUID keeps a card UUID's first group, enough to tell cards apart.
func shortUUID(id string) string {
	if len(id) > 12 && strings.HasPrefix(id, "GPU-") {
		return id[:12]
	}
	return id
}

// uniqueNames lists pods once each, in order, without the default
// namespace.
func uniqueNames(pods []string) string {
	seen := map[string]bool{}
	var out []string
	for _, p := range pods {
		if !seen[p] {
			seen[p] = true
			out = append(out, strings.TrimPrefix(p, "default/"))
		}
	}
	if len(out) == 0 {
		return "-"
	}
	if len(out) > 4 {
		return strings.Join(out[:4], ",") + fmt.Sprintf(" +%d", len(out)-4)
	}
	return strings.Join(out, ",")
}
