package main

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/hami-scheduler/hami-scheduler/apis/scheduling/v1alpha1"
	"github.com/hami-scheduler/hami-scheduler/internal/allocation"
)

// listWaitingGangs lists the PodGroups of every namespace (reservations
// count on the cards whatever the namespace, as every pod's grants do) and
// returns those whose members wait at Permit holding cards
// (devices.GangReservationsAnnotation), by namespace and name. An API
// server that does not serve PodGroups has no gang: nothing is returned
// and nothing said. Any other error, and a PodGroup whose annotation
// cannot be read, is a warning: the cards of those gangs' waiting members
// are not shown.
func listWaitingGangs(ctx context.Context, client dynamic.Interface) ([]allocation.WaitingGang, []string) {
	list, err := client.Resource(v1alpha1.Resource).Namespace(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		if podGroupsNotServed(err) {
			return nil, nil
		}
		return nil, []string{fmt.Sprintf("PodGroups (%s) cannot be listed: the cards that members of gangs waiting at Permit hold are not shown: %v",
			v1alpha1.Resource.GroupResource(), err)}
	}
	var gangs []allocation.WaitingGang
	var warnings []string
	for i := range list.Items {
		pg := &list.Items[i]
		g, ok, err := allocation.WaitingGangOf(pg.GetNamespace(), pg.GetName(), pg.GetAnnotations())
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("%v: the cards its waiting members hold are not shown", err))
			continue
		}
		if ok {
			gangs = append(gangs, g)
		}
	}
	// The API lists by namespace and name; fakes may not.
	sort.Slice(gangs, func(i, j int) bool { return gangs[i].Key() < gangs[j].Key() })
	return gangs, warnings
}

// podGroupsNotServed reports whether err says that the API server does not
// serve the PodGroup API (no scheduler-plugins CRD installed).
func podGroupsNotServed(err error) bool {
	return apierrors.IsNotFound(err) || meta.IsNoMatchError(err)
}

// listWaitingMembers lists the pods of the gangs' waiting members that
// reserved cards on one of the nodes: unbound and not terminated, in every
// namespace (or, as listPods does, in -n's when pods cannot be listed
// cluster-wide; listPods says so). It lists nothing when no member is on
// the nodes. An error is a warning: those members' cards are not shown.
func (o *TopOptions) listWaitingMembers(ctx context.Context, client kubernetes.Interface, gangs []allocation.WaitingGang, nodes []corev1.Node) ([]corev1.Pod, []string) {
	wanted := membersOnNodes(gangs, nodes)
	if len(wanted) == 0 {
		return nil, nil
	}
	unbound := fields.AndSelectors(fields.OneTermEqualSelector("spec.nodeName", ""), notTerminated())
	pods, _, err := o.listPodsMatching(ctx, client, unbound)
	if err != nil {
		return nil, []string{fmt.Sprintf("listing the pods of gang members waiting at Permit: %v: the cards they hold are not shown", err)}
	}
	var out []corev1.Pod
	for i := range pods {
		// Fakes ignore field selectors.
		if pods[i].Spec.NodeName == "" && wanted[pods[i].Namespace+"/"+pods[i].Name] {
			out = append(out, pods[i])
		}
	}
	return out, nil
}

// membersOnNodes names, as namespace/name, the pods of the gangs' members
// whose reservations are on one of the nodes.
func membersOnNodes(gangs []allocation.WaitingGang, nodes []corev1.Node) map[string]bool {
	shown := map[string]bool{}
	for i := range nodes {
		shown[nodes[i].Name] = true
	}
	out := map[string]bool{}
	for _, g := range gangs {
		for _, m := range g.Members {
			if shown[m.Node] {
				out[g.Namespace+"/"+m.Pod] = true
			}
		}
	}
	return out
}
