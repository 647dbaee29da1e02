package plugins

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// SignatureKey is the key of the HAMi plugin's fragment of a pod's
// scheduling signature (kube-scheduler's opportunistic batching, KEP-5598):
// what its Filter and Score read of a pod that asks for devices.
const SignatureKey = "HAMi.deviceFitInputs()"

// deviceSignature is everything of a device pod that the plugin's
// PreFilter, Filter and Score read, so that two pods with equal
// signatures fit and score alike on every node in the same state (the
// cache's cards, holds and queues are the state, not the pod). It is
// deliberately wider than what any one vendor reads: a field too many
// only keeps two pods out of one batch, a field too few would place the
// second where the first's scores, not its own, say.
type deviceSignature struct {
	// Namespace selects the device quota (quota.go).
	Namespace string `json:"namespace"`
	// Annotations carry the card selectors, types, policies, NUMA and the
	// earlier attempts' assignments of every vendor; only those under
	// Kubernetes' own domains are left out (annotationSigned).
	Annotations map[string]string `json:"annotations,omitempty"`
	// Containers and InitContainers carry the device requests.
	Containers     []containerSignature `json:"containers"`
	InitContainers []containerSignature `json:"initContainers,omitempty"`
	// Priority decides whether the pod may be narrowed to candidates.
	Priority *int32 `json:"priority,omitempty"`
	// Gang is the pod's gang (namespace/name): the plugin treats members
	// apart (PreFilter in a pod-group cycle, Unreserve, resumed
	// hand-overs), so members of different gangs are not batched together.
	Gang string `json:"gang,omitempty"`
	// What the choice of candidates (candidates.go) reads of the spec: the
	// nodes it admits and whether other plugins look at other pods.
	NodeSelector     map[string]string   `json:"nodeSelector,omitempty"`
	Affinity         *corev1.Affinity    `json:"affinity,omitempty"`
	Tolerations      []corev1.Toleration `json:"tolerations,omitempty"`
	OthersIgnorePods bool                `json:"othersIgnorePods"`
}

// containerSignature is a container's resources as the vendors parse
// them; an init container's restart policy tells a sidecar, which holds
// its devices beside the app containers, from a run-to-completion one.
type containerSignature struct {
	Requests      corev1.ResourceList            `json:"requests,omitempty"`
	Limits        corev1.ResourceList            `json:"limits,omitempty"`
	RestartPolicy *corev1.ContainerRestartPolicy `json:"restartPolicy,omitempty"`
}

// podSignature returns the pod's signature value: nil for a pod that asks
// for no managed device (PreFilter skips it: no Filter or Score of this
// plugin runs for it), and ok false for a pod whose requests do not parse
// (PreFilter turns it away; it is not worth a batch).
func (p *Plugin) podSignature(pod *corev1.Pod) (value *deviceSignature, ok bool) {
	_, asks, err := p.podRequests(pod)
	if err != nil {
		return nil, false
	}
	if !asks {
		return nil, true
	}
	sig := &deviceSignature{
		Namespace:        pod.Namespace,
		Containers:       containerSignatures(pod.Spec.Containers),
		InitContainers:   containerSignatures(pod.Spec.InitContainers),
		Priority:         pod.Spec.Priority,
		Gang:             gangOf(pod),
		NodeSelector:     pod.Spec.NodeSelector,
		Affinity:         pod.Spec.Affinity,
		Tolerations:      pod.Spec.Tolerations,
		OthersIgnorePods: othersIgnorePods(pod),
	}
	for k, v := range pod.Annotations {
		if !annotationSigned(k) {
			continue
		}
		if sig.Annotations == nil {
			sig.Annotations = make(map[string]string, len(pod.Annotations))
		}
		sig.Annotations[k] = v
	}
	return sig, true
}

func containerSignatures(containers []corev1.Container) []containerSignature {
	if len(containers) == 0 {
		return nil
	}
	out := make([]containerSignature, len(containers))
	for i := range containers {
		c := &containers[i]
		out[i] = containerSignature{Requests: c.Resources.Requests, Limits: c.Resources.Limits, RestartPolicy: c.RestartPolicy}
	}
	return out
}

// annotationSigned reports whether an annotation goes into the signature:
// every one except those under kubernetes.io and its subdomains
// (kubectl's last-applied configuration, an indexed Job's completion
// index, ...), which no vendor reads and which would set apart pods that
// are alike for the devices.
func annotationSigned(key string) bool {
	prefix, _, found := strings.Cut(key, "/")
	if !found {
		return true
	}
	return prefix != "kubernetes.io" && !strings.HasSuffix(prefix, ".kubernetes.io")
}
