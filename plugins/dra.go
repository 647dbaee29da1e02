package plugins

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
	devicecache "github.com/hami-scheduler/hami-scheduler/plugins/cache"
)

// draRoute places pods on DRA nodes: nodes whose cards a DRA driver
// publishes as shareable devices (ResourceSlices) instead of HAMi's device
// plugin registering them (draroute_since1.34.go). The same pod goes to a node of
// either kind, whichever the node and card policies choose: on a DRA node
// its shares are a ResourceClaim the scheduler allocates, reserves for it
// and names in its status, which the driver's kubelet plugin prepares.
// Nil in builds older than 1.34, and where the scheduler runs without the
// features the route needs.
type draRoute interface {
	// view reads, for one cycle, what every allocated claim and every
	// allocation in flight takes of every DRA card; nil when no node
	// publishes DRA cards.
	view() (draView, error)
	// dropStale deletes the claims this scheduler wrote for the pod in an
	// earlier cycle that did not bind it (a scheduler stopped between
	// PreBind and Bind leaves one allocated and reserved for the pod
	// still unbound).
	dropStale(ctx context.Context, pod *corev1.Pod) error
	// reserve makes the pod's claim for its assignments (index-aligned
	// with the registry's vendors) on the node's DRA cards pending in the
	// account, for PreBind to write.
	reserve(pod *corev1.Pod, node string, assignments []devices.Assignment) (draBinding, error)
}

// draView is one cycle's view of the DRA cards.
type draView interface {
	// cards returns vendor vi's DRA cards on the node and their usage (a
	// copy in dst); none when the node publishes none of the vendor's.
	// err says why the node's DRA cards cannot take pods (their driver's
	// DeviceClass is missing).
	cards(node string, vi int, dst []devices.Usage) (cards []devices.Card, used []devices.Usage, err error)
	// nodes are the nodes that publish DRA cards.
	nodes() []string
	// namespaceUse is what the namespace's claims (written, or pending in
	// this scheduler) take of vendor vi's DRA cards, in MiB and cores,
	// for HAMi's device quota.
	namespaceUse(namespace string, vi int) (memoryMiB, cores int64)
	// claimNamespaces are the namespaces with claims (written, or pending
	// in this scheduler) allocated on a known driver's devices.
	claimNamespaces() []string
	// holding is what the pod's claims reserved for it alone take of the
	// DRA cards of the node, as a device cache holding (by card UUID),
	// for preemption to free; ok is false when it holds none.
	holding(pod *corev1.Pod, node string) (held devicecache.Holding, ok bool)
}

// draBinding is one pod's claim between Reserve and PreBind.
type draBinding interface {
	// write creates the claim, allocated and reserved for the pod, and
	// names it in the pod's status.
	write(ctx context.Context, pod *corev1.Pod) error
	// release gives the claim back (pending or written). Idempotent.
	release(ctx context.Context) error
}

// reserveClaim is Reserve on a DRA node: the pod's claim becomes pending
// in the DRA account, for PreBind to write. The device cache is not
// involved: the claim is the account of a DRA card.
func (p *Plugin) reserveClaim(ctx context.Context, s *cycleState, pod *corev1.Pod, node string, fit *nodeFit) *fwk.Status {
	binding, err := p.dra.reserve(pod, node, fit.assignments)
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("reserve the pod's ResourceClaim: %w", err))
	}
	s.mu.Lock()
	s.draBinding = binding
	s.mu.Unlock()
	klog.FromContext(ctx).V(4).Info("DRA devices reserved", "pod", klog.KObj(pod), "node", node)
	p.reserved(s, pod, node, true)
	return nil
}

// writeClaim is PreBind on a DRA node: the claim is created, allocated
// and reserved for the pod, and named in its status. No HAMi annotation
// and no node lock: no HAMi device plugin serves the node, the driver's
// kubelet plugin prepares the claim.
func (p *Plugin) writeClaim(ctx context.Context, s *cycleState, pod *corev1.Pod, node string) *fwk.Status {
	s.mu.Lock()
	binding := s.draBinding
	s.mu.Unlock()
	if binding == nil {
		err := fmt.Errorf("no ResourceClaim reserved for the pod on node %s", node)
		p.bindingFailed(pod, err)
		return fwk.AsStatus(err)
	}
	if err := p.clearHandOver(ctx, pod); err != nil {
		return p.preBindFailure(s, pod, patchFailure(err), err)
	}
	if err := binding.write(ctx, pod); err != nil {
		return p.preBindFailure(s, pod, "claim", err)
	}
	klog.FromContext(ctx).V(3).Info("ResourceClaim written for the pod", "pod", klog.KObj(pod), "node", node)
	return nil
}

// releaseClaim is Unreserve of a pod reserved on a DRA node: its claim is
// given back, pending or written. It reports whether the pod had one.
func (p *Plugin) releaseClaim(ctx context.Context, s *cycleState, pod *corev1.Pod) bool {
	s.mu.Lock()
	binding := s.draBinding
	s.draBinding = nil
	s.mu.Unlock()
	if binding == nil {
		return false
	}
	p.waiting.Reserve(pod.UID, false, time.Now())
	if err := binding.release(ctx); err != nil {
		klog.FromContext(ctx).Error(err, "ResourceClaim not given back", "pod", klog.KObj(pod))
	}
	return true
}

// clearHandOver removes from the pod what an earlier attempt to hand it to
// a device plugin left (HAMi leaves the assignment of a pod that never got
// the node lock): a pod placed by a claim carries none of HAMi's
// hand-over annotations, so that nothing counts its cards twice. A merge
// patch that applies only to the pod with that UID; nothing when there is
// nothing to remove.
func (p *Plugin) clearHandOver(ctx context.Context, pod *corev1.Pod) error {
	keys := []string{devices.AssignedNode, devices.AssignedTime, devices.BindPhase, devices.BindTime, devices.AssignmentRecord}
	for _, v := range p.registry.Vendors() {
		toAllocate, allocated := v.AssignmentAnnotations()
		keys = append(keys, toAllocate, allocated)
	}
	annotations := map[string]any{}
	for _, k := range keys {
		if _, ok := pod.Annotations[k]; ok && k != "" {
			annotations[k] = nil
		}
	}
	_, labelled := pod.Labels[devices.AssignedNode]
	if len(annotations) == 0 && !labelled {
		return nil
	}
	meta := map[string]any{"uid": pod.UID, "annotations": annotations}
	if labelled {
		meta["labels"] = map[string]any{devices.AssignedNode: nil}
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return err
	}
	if _, err := p.handle.ClientSet().CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("clear an earlier hand-over from the pod: %w", err)
	}
	return nil
}
