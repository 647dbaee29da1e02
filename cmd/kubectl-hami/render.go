package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/hami-scheduler/hami-scheduler/internal/allocation"
)

// barWidth is the number of cells between a bar's brackets.
const barWidth = 10

// bar draws used of total as [###.......]. Any use shows at least one #,
// and the bar is full only when nothing is left.
func bar(used, total int64) string {
	n := 0
	switch {
	case total > 0:
		n = int((used*barWidth + total/2) / total)
	case used > 0:
		n = barWidth
	}
	if used > 0 && n == 0 {
		n = 1
	}
	if used < total && n >= barWidth {
		n = barWidth - 1
	}
	n = min(n, barWidth)
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", barWidth-n) + "]"
}

func percent(a Amount) int64 {
	if a.Total <= 0 {
		return 0
	}
	return a.Used * 100 / a.Total
}

// shortUUID keeps a card UUID's first group, enough to tell cards apart.
func shortUUID(id string) string {
	if len(id) > 12 && strings.HasPrefix(id, "GPU-") {
		return id[:12]
	}
	return id
}

func cardState(c *TopCard) string {
	var s []string
	if !c.Healthy {
		s = append(s, "unhealthy")
	}
	if c.Cordoned {
		s = append(s, "cordoned")
	}
	if c.Overcommitted {
		s = append(s, "OVERCOMMITTED")
	}
	if len(s) == 0 {
		return "ok"
	}
	return strings.Join(s, ",")
}

// holderName names the pod holding the grant as namespace/name, and says
// when it is a member of a gang waiting at Permit that the card is
// reserved for: "ns/name (gang ns/podgroup, waiting)"; a claim reserved
// for no pod is "ns/claim (claim, no pod)".
func holderName(g Grant) string {
	if g.Name == "" && g.Claim != "" {
		return g.Namespace + "/" + g.Claim + " (claim, no pod)"
	}
	name := g.Namespace + "/" + g.Name
	if g.ReservedFor != "" {
		name += " (gang " + g.ReservedFor + ", waiting)"
	}
	return name
}

// podNames lists the card's pods once each, in order.
func podNames(c *TopCard) string {
	seen := map[string]bool{}
	var out []string
	for _, g := range c.Pods {
		key := holderName(g)
		if !seen[key] {
			seen[key] = true
			out = append(out, key)
		}
	}
	s := strings.Join(out, ", ")
	if c.OtherPods > 0 {
		s = strings.TrimSpace(s + fmt.Sprintf(" (+%d in other namespaces)", c.OtherPods))
	}
	if s == "" {
		return "-"
	}
	return s
}

// grantText is one grant of -o wide: ns/pod[container] MiB, cores, the
// claim that gives it and the gang it is reserved for.
func grantText(g Grant) string {
	if g.Name == "" && g.Claim != "" {
		return fmt.Sprintf("%s %d MiB, %d cores", holderName(g), g.MemoryMiB, g.Cores)
	}
	text := fmt.Sprintf("%s/%s[%s] %d MiB, %d cores", g.Namespace, g.Name, g.Container, g.MemoryMiB, g.Cores)
	if g.Claim != "" {
		text += " (claim " + g.Claim + ")"
	}
	if g.ReservedFor != "" {
		text += " (gang " + g.ReservedFor + ", waiting)"
	}
	return text
}

// writeTable prints the document for people: per node a table of its cards
// and a total row, the node's pod problems, then the cluster's totals.
// wide adds full UUIDs, the NUMA node and one row per grant.
func writeTable(w io.Writer, doc *Top, wide bool) error {
	for _, warning := range doc.Warnings {
		fmt.Fprintf(w, "Warning: %s\n", warning)
	}
	if len(doc.Nodes) == 0 {
		_, err := fmt.Fprintln(w, "No HAMi device nodes found.")
		return err
	}
	for i := range doc.Nodes {
		n := &doc.Nodes[i]
		if i > 0 || len(doc.Warnings) > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "NODE %s%s\n", n.Name, kindText(n.Kind))
		if n.Error != "" {
			fmt.Fprintf(w, "  %s\n", n.Error)
		}
		if n.Error == "" || len(n.Cards) > 0 {
			writeNode(w, n, wide)
		}
		for _, p := range n.Problems {
			fmt.Fprintf(w, "  problem: pod %s/%s: %s\n", p.Namespace, p.Name, p.Problem)
		}
	}
	t := doc.Total
	fmt.Fprintln(w)
	nodes := fmt.Sprintf("%d %s", t.Nodes, plural(t.Nodes, "node", "nodes"))
	if t.UnreadableNodes > 0 {
		nodes += fmt.Sprintf(" (+%d without cards)", t.UnreadableNodes)
	}
	_, err := fmt.Fprintf(w, "CLUSTER %s, %d %s: memory %s %d/%d MiB (%d%%), cores %s %d/%d (%d%%), sharers %d/%d\n",
		nodes, t.Cards, plural(t.Cards, "card", "cards"),
		bar(t.MemoryMiB.Used, t.MemoryMiB.Total), t.MemoryMiB.Used, t.MemoryMiB.Total, percent(t.MemoryMiB),
		bar(t.Cores.Used, t.Cores.Total), t.Cores.Used, t.Cores.Total, percent(t.Cores),
		t.Sharers.Used, t.Sharers.Total)
	return err
}

func writeNode(w io.Writer, n *TopNode, wide bool) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if wide {
		fmt.Fprintln(tw, "VENDOR\tCARD\tUUID\tMODEL\tMODE\tNUMA\tSTATE\tMEMORY (MiB)\t\tCORES\t\tSHARERS\tPODS")
	} else {
		fmt.Fprintln(tw, "VENDOR\tCARD\tUUID\tMODEL\tMODE\tSTATE\tMEMORY (MiB)\t\tCORES\t\tSHARERS\tPODS")
	}
	for i := range n.Cards {
		c := &n.Cards[i]
		use := fmt.Sprintf("%s\t%d/%d\t%s\t%d/%d\t%d/%d", bar(c.MemoryMiB.Used, c.MemoryMiB.Total), c.MemoryMiB.Used, c.MemoryMiB.Total,
			bar(c.Cores.Used, c.Cores.Total), c.Cores.Used, c.Cores.Total, c.Sharers.Used, c.Sharers.Total)
		if !wide {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Vendor, c.Index, shortUUID(c.UUID), c.Model, c.Mode, cardState(c), use, podNames(c))
			continue
		}
		pods := []string{"-"}
		if len(c.Pods) > 0 {
			pods = pods[:0]
			for _, g := range c.Pods {
				pods = append(pods, grantText(g))
			}
		}
		if c.OtherPods > 0 {
			pods = append(pods, fmt.Sprintf("(+%d in other namespaces)", c.OtherPods))
			if len(c.Pods) == 0 {
				pods = pods[1:]
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", c.Vendor, c.Index, c.UUID, c.Model, c.Mode, c.NUMA, cardState(c), use, pods[0])
		for _, p := range pods[1:] {
			fmt.Fprintf(tw, "\t\t\t\t\t\t\t\t\t\t\t\t%s\n", p)
		}
	}
	t := n.Total
	blanks := "\t\t\t"
	if wide {
		blanks += "\t"
	}
	fmt.Fprintf(tw, "TOTAL\t\t%d %s%s\t%s\t%d/%d\t%s\t%d/%d\t%d/%d\n", t.Cards, plural(t.Cards, "card", "cards"), blanks,
		bar(t.MemoryMiB.Used, t.MemoryMiB.Total), t.MemoryMiB.Used, t.MemoryMiB.Total,
		bar(t.Cores.Used, t.Cores.Total), t.Cores.Used, t.Cores.Total, t.Sharers.Used, t.Sharers.Total)
	_ = tw.Flush()
}

// kindText says, after a node's name, how its cards are known:
// "  (device plugin)", "  (DRA: <driver>)", or both; nothing without
// cards.
func kindText(kinds string) string {
	if kinds == "" {
		return ""
	}
	var out []string
	for k := range strings.SplitSeq(kinds, ", ") {
		if k == allocation.KindDevicePlugin {
			out = append(out, "device plugin")
		} else {
			out = append(out, "DRA: "+k)
		}
	}
	return "  (" + strings.Join(out, "; ") + ")"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// writeJSON prints the document, indented, with a final newline.
func writeJSON(w io.Writer, doc *Top) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
