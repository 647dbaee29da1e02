package devices

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Optional vendor interfaces. A vendor implements one of these when HAMi's
// protocol asks more of it than Vendor covers; callers find them with a
// type assertion and do nothing for vendors that lack them.

// Handshaker is a vendor whose device plugin takes part in HAMi's node
// handshake (hami-protocol 9): the scheduler stamps Requesting_<time> under
// the key and deletes the key when the vendor's cards are dropped.
type Handshaker interface {
	// HandshakeAnnotation is the node annotation key, e.g.
	// hami.io/node-handshake-dcu.
	HandshakeAnnotation() string
}

// PodAnnotator is a vendor whose device plugin reads pod annotations
// besides the assignment pair. They go into the same patch as the
// assignment (PreBind), and only when the assignment is not empty.
type PodAnnotator interface {
	// AssignmentExtras returns the extra annotations for the pod's
	// assignment a (this vendor's part only); now is the decision time.
	AssignmentExtras(pod *corev1.Pod, a Assignment, now time.Time) (map[string]string, error)
}

// PodDefaulter is a vendor whose admission defaults depend on the pod
// (its annotations) or change it (e.g. spec.runtimeClassName). The webhook
// calls DefaultInPod instead of Vendor.Default for such a vendor.
type PodDefaulter interface {
	// DefaultInPod applies the defaults to ctr, a container of pod, and to
	// pod itself, and reports whether ctr asks for the vendor's devices.
	DefaultInPod(pod *corev1.Pod, ctr *corev1.Container) (bool, error)
}

// CoreAccounter is a vendor whose cards' grants are checked against
// another core total than the registered one (Ascend NPUs of a hami-core
// node: cores in percent, 100). Tools that read usage back
// (internal/allocation) account a card against CoreTotal.
type CoreAccounter interface {
	CoreTotal(c *Card) int32
}

// NodeScorer is a vendor that adds its own term to a node's score for a
// placement, as HAMi's ScoreNode does (e.g. Ascend's network topology).
type NodeScorer interface {
	// ScoreAssignment scores the assignment a on the node's cards (as
	// given to Fit); higher is better, 0 means no opinion.
	ScoreAssignment(cards []Card, a Assignment) float64
}

// SliceReader is a vendor whose pods record the card slices they reserve
// in an annotation of their own (NVIDIA MIG: hami.io/vgpu-mig-allocations).
// The usage cache charges them with ApplyReservations.
type SliceReader interface {
	// PodSlices returns the reservations the pod's annotations record; nil
	// when there are none or they cannot be decoded (HAMi then ignores the
	// annotation, and ApplyReservations fails the pod's mig cards closed).
	PodSlices(pod *corev1.Pod) []SliceReservation
}

// NodeLocker is a vendor that says which node lock HAMi takes for it:
// NodeLock returns NodeLock (hami.io/mutex.lock) for the shared lock and ""
// when HAMi takes none for the vendor (Moore Threads, AWS Neuron, Enflame),
// whose device plugins never release one. A vendor without it takes the
// shared lock.
type NodeLocker interface {
	NodeLock() string
}

// ServeChecker is a vendor whose published device plugin cannot serve
// every request HAMi's scheduler would place (see UnservableError).
// Registry.ParsePod calls CheckServable for every pod, after the vendor's
// ParsePod, which stays HAMi's reading of the request.
type ServeChecker interface {
	// CheckServable returns an *UnservableError for a pod the vendor's
	// device plugin cannot serve, nil otherwise.
	CheckServable(pod *corev1.Pod) error
}

// CountAdvertiser is a vendor that says whether its device plugin
// registers the count resource on the node. Cambricon's registers only the
// vcore and vmemory shares (and real-mlu-counts), never HAMi's
// cambricon.com/vmlu, so NodeResourcesFit must ignore the count too. A
// vendor without it advertises its count.
type CountAdvertiser interface {
	CountAdvertised() bool
}

// GrantClassifier is a vendor whose fit depends on the app classes of the
// pods on a card (MetaX sGPU's metax-tech.com/sgpu-app-class). Its Fit sets
// Grant.Class on the grants it returns; the usage cache sets GrantClass on
// the grants it decodes from a pod's annotations, which do not carry it.
// Usage.Online and Usage.Offline then count them.
type GrantClassifier interface {
	// GrantClass is the class of the pod's grants of this vendor.
	GrantClass(pod *corev1.Pod) AppClass
}
