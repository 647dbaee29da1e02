package devices

import corev1 "k8s.io/api/core/v1"

// Optional vendor interfaces for node scores that, unlike NodeScorer's,
// depend on the node policy, the node's annotations, the pod or the cards'
// use before the pod (HAMi's ScoreNode receives all of these). The plugin
// adds them to HAMi's node score, as HAMi's OverrideScore does, and orders
// the nodes of such a pod by the sum (highest first under binpack, lowest
// under spread).

// NodeAnnotationScorer scores a node from its annotations under the pod's
// node policy (MetaX GPU's topology losses and scores); the value is added
// as is.
type NodeAnnotationScorer interface {
	ScoreNode(node *corev1.Node, policy NodePolicy, a Assignment) float64
}

// PlacementScorer scores the assignment a given the cards' use before the
// pod (Kunlunxin XPU's fragmentation score); the value is added as is,
// under either policy.
type PlacementScorer interface {
	ScorePlacement(cards []Card, usedBefore []Usage, a Assignment) float64
}

// PolicyNeutralScorer scores the pod's assignment a given the cards' use
// before the pod, higher being better under either policy (MetaX sGPU's
// MetaLink score): HAMi multiplies it by PolicyNeutralWeight, negated
// under spread.
type PolicyNeutralScorer interface {
	ScorePlacement(pod *corev1.Pod, cards []Card, usedBefore []Usage, a Assignment) float64
	// ScoredAnnotations are the pod annotations ScorePlacement reads, so
	// that a pod's scheduling signature carries them.
	ScoredAnnotations() []string
}

// PolicyNeutralWeight is HAMi's weight of a PolicyNeutralScorer's score.
const PolicyNeutralWeight = 10000
