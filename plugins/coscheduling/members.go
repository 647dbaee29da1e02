package coscheduling

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/hami-scheduler/hami-scheduler/apis/scheduling/v1alpha1"
)

// groupOf returns the name of the PodGroup, in the pod's namespace, that
// the pod belongs to: the value of its scheduling.x-k8s.io/pod-group
// label; "" when it has none, or when the pod names an in-tree pod group
// (spec.schedulingGroup, Kubernetes 1.36 and later), which kube-scheduler's
// own GangScheduling places.
func groupOf(pod *corev1.Pod) string {
	if pod == nil || inTreeGroup(pod) {
		return ""
	}
	return pod.Labels[v1alpha1.PodGroupLabel]
}

// groupKey names a PodGroup as namespace/name.
func groupKey(namespace, name string) string { return namespace + "/" + name }

// memberIndex indexes the member informer's pods by their group's key.
const memberIndex = "podGroup"

// memberPods reads the pods of every PodGroup from an informer of the
// plugin's own, which lists only pods carrying the group label, terminated
// ones included (the scheduler's own pod informer leaves those out, and the
// PodGroup status counts them).
type memberPods struct {
	informer cache.SharedIndexInformer
}

func newMemberPods(client kubernetes.Interface) (*memberPods, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = v1alpha1.PodGroupLabel }))
	informer := factory.Core().V1().Pods().Informer()
	err := informer.AddIndexers(cache.Indexers{memberIndex: func(obj any) ([]string, error) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return nil, nil
		}
		if name := groupOf(pod); name != "" {
			return []string{groupKey(pod.Namespace, name)}, nil
		}
		return nil, nil
	}})
	if err != nil {
		return nil, fmt.Errorf("index member pods: %w", err)
	}
	return &memberPods{informer: informer}, nil
}

// of returns the pods of the group namespace/name, terminated ones
// included.
func (m *memberPods) of(namespace, name string) []*corev1.Pod {
	objs, err := m.informer.GetIndexer().ByIndex(memberIndex, groupKey(namespace, name))
	if err != nil {
		return nil
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, obj := range objs {
		if pod, ok := obj.(*corev1.Pod); ok {
			pods = append(pods, pod)
		}
	}
	return pods
}

// terminated reports whether the pod has run to completion or failed.
func terminated(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// bound reports whether the pod is bound to a node and still counts for
// its group (not terminated, not being deleted).
func bound(pod *corev1.Pod) bool {
	return pod.Spec.NodeName != "" && !terminated(pod) && pod.DeletionTimestamp == nil
}

// permitted remembers, per group, the pods Permit has let through or made
// wait and that are not bound yet; bound members are read from the member
// informer. Unreserve and the pod's deletion forget a pod.
type permitted struct {
	mu     sync.Mutex
	groups map[string]map[types.UID]struct{}
}

func (p *permitted) add(group string, uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.groups == nil {
		p.groups = map[string]map[types.UID]struct{}{}
	}
	if p.groups[group] == nil {
		p.groups[group] = map[types.UID]struct{}{}
	}
	p.groups[group][uid] = struct{}{}
}

func (p *permitted) remove(group string, uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.groups[group], uid)
	if len(p.groups[group]) == 0 {
		delete(p.groups, group)
	}
}

func (p *permitted) has(group string, uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.groups[group][uid]
	return ok
}

// placed counts the members of a group that are placed: bound (from pods,
// the group's pods as the informer holds them) or past Permit, each once.
// except, when set, is not counted.
func (p *permitted) placed(group string, pods []*corev1.Pod, except types.UID) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for uid := range p.groups[group] {
		if uid != except {
			n++
		}
	}
	for _, pod := range pods {
		if pod.UID == except || !bound(pod) {
			continue
		}
		if _, counted := p.groups[group][pod.UID]; !counted {
			n++
		}
	}
	return n
}
