package e2e

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The default plugins run beside HAMi in the hami-scheduler profile: node
// affinity and taints still decide where a GPU pod may go.
func TestDefaultPluginsStillApply(t *testing.T) {
	e := newEnv(t, "defaults")
	taint := corev1.Taint{Key: "dedicated", Value: "training", Effect: corev1.TaintEffectNoSchedule}
	nodes := e.addNodes("3 nodes x 2 cards of NVIDIA A100 40 GiB, split 10", func(i int, n *corev1.Node) {
		switch i {
		case 0:
			n.Spec.Taints = []corev1.Taint{taint}
		case 1:
			n.Labels["tier"] = "gold"
		}
	})
	tainted, gold, plain := nodes[0].Name, nodes[1].Name, nodes[2].Name

	require := func(key string, op corev1.NodeSelectorOperator, values ...string) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}},
			}}},
		}}
	}
	tests := []struct {
		name        string
		affinity    *corev1.Affinity
		tolerations []corev1.Toleration
		// wantNode is where the pods must land; empty: nowhere.
		wantNode   string
		wantReason string
	}{
		{name: "affinity-picks-gold", affinity: require("tier", corev1.NodeSelectorOpIn, "gold"), wantNode: gold},
		{name: "taint-keeps-out", affinity: require("tier", corev1.NodeSelectorOpNotIn, "gold"), wantNode: plain},
		{name: "toleration-lets-in", affinity: require(corev1.LabelHostname, corev1.NodeSelectorOpIn, tainted),
			tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "training", Effect: corev1.TaintEffectNoSchedule}},
			wantNode:    tainted},
		{name: "no-toleration-no-node", affinity: require(corev1.LabelHostname, corev1.NodeSelectorOpIn, tainted),
			wantReason: "untolerated taint"},
		{name: "no-matching-node", affinity: require("tier", corev1.NodeSelectorOpIn, "platinum"),
			wantReason: "didn't match Pod's node affinity/selector"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.t = t
			// Several pods each, so that a lucky first placement proves nothing.
			for i := range 3 {
				name := tt.name + "-" + string(rune('a'+i))
				p := e.pod(name, gpu{cards: 1, memory: 2000, cores: 10})
				p.Spec.Affinity, p.Spec.Tolerations = tt.affinity, tt.tolerations
				e.create(p)
				if tt.wantNode == "" {
					if msg := e.waitUnschedulable(name); !strings.Contains(msg, tt.wantReason) {
						t.Errorf("pod %s: event %q does not say %q", name, msg, tt.wantReason)
					}
					continue
				}
				if got := e.waitRunning(name); got.Spec.NodeName != tt.wantNode {
					t.Errorf("pod %s landed on %s, want %s", name, got.Spec.NodeName, tt.wantNode)
				}
			}
		})
	}
	e.t = t
	e.checkAccounting()
}
