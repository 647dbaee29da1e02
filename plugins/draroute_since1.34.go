//go:build !k8s1.33 && !k8s1.30

package plugins

import (
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	framework "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/dra"
	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
	devicecache "github.com/hami-scheduler/hami-scheduler/plugins/cache"
	"github.com/hami-scheduler/hami-scheduler/plugins/dranodes"
)

// dranodesRoute is draRoute on kube-scheduler's shared DRA manager.
type dranodesRoute struct {
	inventory *dranodes.Inventory
	manager   framework.SharedDRAManager
	client    kubernetes.Interface
	vendors   []devices.Vendor

	// pending are the claims reserved and not yet written, by claim
	// object, for the namespaces' use.
	pendingMu sync.Mutex
	pending   map[*dra.Claim]struct{}
}

// newDRARoute watches ResourceSlices for DRA cards when the scheduler
// runs a DRA manager with consumable capacity (shares of a device) and
// extended resources backed by DRA (the kubelet reads a claim the
// scheduler names in the pod's status): 1.36 and later by default. synced
// reports whether the slices were listed.
func newDRARoute(logger klog.Logger, handle fwk.Handle, registry *devices.Registry, split func(vendor string) int32) (draRoute, func() bool, error) {
	manager := handle.SharedDRAManager()
	gates := utilfeature.DefaultFeatureGate
	if manager == nil || !gates.Enabled(features.DRAConsumableCapacity) || !gates.Enabled(features.DRAExtendedResource) {
		logger.V(2).Info("DRA nodes are not used: the scheduler runs without DRA, DRAConsumableCapacity or DRAExtendedResource")
		return nil, func() bool { return true }, nil
	}
	inv, reg, err := dranodes.NewInventory(logger, handle.SharedInformerFactory().Resource().V1().ResourceSlices().Informer(), split)
	if err != nil {
		return nil, nil, err
	}
	route := &dranodesRoute{inventory: inv, manager: manager, client: handle.ClientSet(), vendors: registry.Vendors(), pending: map[*dra.Claim]struct{}{}}
	return route, reg.HasSynced, nil
}

func (r *dranodesRoute) view() (draView, error) {
	if r.inventory.Empty() {
		return nil, nil
	}
	consumed, err := dranodes.Consumed(r.manager.ResourceClaims())
	if err != nil {
		return nil, err
	}
	return &dranodesView{route: r, consumed: consumed}, nil
}

// dranodesView is draView on one read of the DRA account.
type dranodesView struct {
	route    *dranodesRoute
	consumed map[dra.DeviceKey]dra.Consumption
}

func (v *dranodesView) cards(node string, vi int, dst []devices.Usage) ([]devices.Card, []devices.Usage, error) {
	nd := v.route.inventory.Node(node)
	if nd == nil {
		return nil, dst[:0], nil
	}
	ds, cards := nd.ForVendor(v.route.vendors[vi].Name())
	if len(ds) == 0 {
		return nil, dst[:0], nil
	}
	for _, d := range ds {
		if _, err := v.route.manager.DeviceClasses().Get(d.Driver.DeviceClass); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, dst[:0], fmt.Errorf("DeviceClass %s of driver %s is not installed", d.Driver.DeviceClass, d.Driver.Name)
			}
			return nil, dst[:0], err
		}
	}
	return cards, append(dst[:0], dra.Usage(ds, v.consumed)...), nil
}

func (v *dranodesView) nodes() []string { return v.route.inventory.Nodes() }

// dropStale deletes the claims labelled hami.io/claim whose controller is
// the pod: in PreFilter the pod is in no binding cycle of this scheduler,
// so such a claim was written by an earlier one stopped before it bound
// the pod. Left, it would count its shares taken, and the pod's next
// placement would hold a second claim. Only while the API server shows
// the pod (that UID) unbound: a bind the informer has not shown yet keeps
// its claim.
func (r *dranodesRoute) dropStale(ctx context.Context, pod *corev1.Pod) error {
	claims, err := r.manager.ResourceClaims().List()
	if err != nil {
		return err
	}
	var stale []*resourceapi.ResourceClaim
	for _, c := range claims {
		if c.Namespace != pod.Namespace || c.Labels[dra.ClaimLabel] != "true" {
			continue
		}
		if owner := metav1.GetControllerOf(c); owner != nil && owner.UID == pod.UID {
			stale = append(stale, c)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	live, err := r.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the pod before deleting its stale ResourceClaims: %w", err)
	}
	if live.UID != pod.UID || live.Spec.NodeName != "" {
		return nil
	}
	for _, c := range stale {
		if err := dranodes.DeleteClaim(ctx, r.client, c.Namespace, c.Name, c.UID); err != nil {
			return fmt.Errorf("delete the ResourceClaim an earlier placement left: %w", err)
		}
		klog.FromContext(ctx).V(2).Info("Deleted the ResourceClaim an earlier placement left, the pod unbound", "pod", klog.KObj(pod), "claim", klog.KObj(c))
	}
	return nil
}

func (r *dranodesRoute) reserve(pod *corev1.Pod, node string, assignments []devices.Assignment) (draBinding, error) {
	nd := r.inventory.Node(node)
	if nd == nil {
		return nil, fmt.Errorf("node %s publishes no DRA card any more", node)
	}
	var shares []dra.Share
	for vi, a := range assignments {
		if a.Empty() {
			continue
		}
		ds, _ := nd.ForVendor(r.vendors[vi].Name())
		for ci, grants := range a {
			for _, g := range grants {
				d, ok := deviceOf(ds, g.UUID)
				if !ok {
					return nil, fmt.Errorf("card %s is not a DRA card of node %s", g.UUID, node)
				}
				shares = append(shares, dra.Share{Container: ci, Resource: r.vendors[vi].Resources().Count, Grant: g, Device: d})
			}
		}
	}
	claim, err := dra.NewClaim(pod, node, shares, uuid.NewUUID)
	if err != nil {
		return nil, err
	}
	b, err := dranodes.Reserve(r.manager.ResourceClaims(), r.client, claim)
	if err != nil {
		return nil, err
	}
	r.pendingMu.Lock()
	r.pending[claim] = struct{}{}
	r.pendingMu.Unlock()
	return dranodesBinding{b: b, route: r, node: node}, nil
}

func (v *dranodesView) holding(pod *corev1.Pod, node string) (devicecache.Holding, bool) {
	nd := v.route.inventory.Node(node)
	if nd == nil {
		return devicecache.Holding{}, false
	}
	held := devicecache.Holding{Key: pod.Namespace + "/" + pod.Name, Node: node, Assignments: make([]devices.Assignment, len(v.route.vendors))}
	found := false
	for _, name := range podClaimNames(pod) {
		claim, err := v.route.manager.ResourceClaims().Get(pod.Namespace, name)
		if err != nil || claim.Status.Allocation == nil || len(claim.Status.ReservedFor) != 1 || claim.Status.ReservedFor[0].UID != pod.UID {
			// Not allocated, or shared with other pods: evicting this one
			// frees nothing.
			continue
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			d, ok := deviceByKey(nd.Devices, dra.DeviceKey{Driver: r.Driver, Pool: r.Pool, Device: r.Device})
			if !ok || !d.Shared {
				continue
			}
			vi := slices.IndexFunc(v.route.vendors, func(vendor devices.Vendor) bool { return vendor.Name() == d.Driver.Vendor })
			if vi < 0 {
				continue
			}
			m := r.ConsumedCapacity[d.Driver.Memory]
			g := devices.Grant{UUID: d.Card.UUID, Vendor: d.Driver.Vendor, MemoryMiB: int32((m.Value() + dra.MiB - 1) / dra.MiB)}
			if d.Driver.Cores != "" {
				c := r.ConsumedCapacity[d.Driver.Cores]
				g.Cores = int32(c.Value())
			}
			held.Assignments[vi] = append(held.Assignments[vi], []devices.Grant{g})
			found = true
		}
	}
	return held, found
}

// podClaimNames are the names of the pod's claims: those of its spec and
// the one the scheduler named in its status for extended resources.
func podClaimNames(pod *corev1.Pod) []string {
	var names []string
	for _, c := range pod.Spec.ResourceClaims {
		if c.ResourceClaimName != nil {
			names = append(names, *c.ResourceClaimName)
		}
	}
	for _, st := range pod.Status.ResourceClaimStatuses {
		if st.ResourceClaimName != nil {
			names = append(names, *st.ResourceClaimName)
		}
	}
	if st := pod.Status.ExtendedResourceClaimStatus; st != nil {
		names = append(names, st.ResourceClaimName)
	}
	return names
}

func deviceByKey(ds []dra.Device, key dra.DeviceKey) (dra.Device, bool) {
	for _, d := range ds {
		if d.Key == key {
			return d, true
		}
	}
	return dra.Device{}, false
}

// settled drops a claim from the pending ones: written (its object now
// counts) or given back.
func (r *dranodesRoute) settled(claim *dra.Claim) {
	r.pendingMu.Lock()
	delete(r.pending, claim)
	r.pendingMu.Unlock()
}

func (v *dranodesView) namespaceUse(namespace string, vi int) (memoryMiB, cores int64) {
	vendor := v.route.vendors[vi].Name()
	add := func(results []resourceapi.DeviceRequestAllocationResult) {
		for _, r := range results {
			driver, ok := dra.DriverNamed(r.Driver)
			if !ok || driver.Vendor != vendor {
				continue
			}
			m := r.ConsumedCapacity[driver.Memory]
			memoryMiB += (m.Value() + dra.MiB - 1) / dra.MiB
			if driver.Cores != "" {
				c := r.ConsumedCapacity[driver.Cores]
				cores += c.Value()
			}
		}
	}
	if claims, err := v.route.manager.ResourceClaims().List(); err == nil {
		for _, c := range claims {
			if c.Namespace == namespace && c.Status.Allocation != nil {
				add(c.Status.Allocation.Devices.Results)
			}
		}
	}
	v.route.pendingMu.Lock()
	defer v.route.pendingMu.Unlock()
	for c := range v.route.pending {
		if c.Object.Namespace == namespace {
			add(c.Object.Status.Allocation.Devices.Results)
		}
	}
	return memoryMiB, cores
}

func (v *dranodesView) claimNamespaces() []string {
	seen := map[string]bool{}
	known := func(results []resourceapi.DeviceRequestAllocationResult) bool {
		return slices.ContainsFunc(results, func(r resourceapi.DeviceRequestAllocationResult) bool {
			_, ok := dra.DriverNamed(r.Driver)
			return ok
		})
	}
	if claims, err := v.route.manager.ResourceClaims().List(); err == nil {
		for _, c := range claims {
			if c.Status.Allocation != nil && known(c.Status.Allocation.Devices.Results) {
				seen[c.Namespace] = true
			}
		}
	}
	v.route.pendingMu.Lock()
	for c := range v.route.pending {
		seen[c.Object.Namespace] = true
	}
	v.route.pendingMu.Unlock()
	out := make([]string, 0, len(seen))
	for ns := range seen {
		out = append(out, ns)
	}
	slices.Sort(out)
	return out
}

func deviceOf(ds []dra.Device, uuid string) (dra.Device, bool) {
	for _, d := range ds {
		if d.Card.UUID == uuid {
			return d, true
		}
	}
	return dra.Device{}, false
}

// dranodesBinding is draBinding on dranodes.Binding.
type dranodesBinding struct {
	b     *dranodes.Binding
	route *dranodesRoute
	node  string
}

func (b dranodesBinding) write(ctx context.Context, pod *corev1.Pod) error {
	// A device may have vanished since Reserve (its driver restarted, the
	// node moved back to the device plugin): no claim is written for it.
	for _, r := range b.b.Claim().Object.Status.Allocation.Devices.Results {
		if key := (dra.DeviceKey{Driver: r.Driver, Pool: r.Pool, Device: r.Device}); !b.route.inventory.Published(b.node, key) {
			return fmt.Errorf("device %s/%s of node %s is no longer published", r.Driver, r.Device, b.node)
		}
	}
	err := b.b.Write(ctx, pod)
	if err == nil {
		b.route.settled(b.b.Claim())
	}
	return err
}

func (b dranodesBinding) release(ctx context.Context) error {
	defer b.route.settled(b.b.Claim())
	return b.b.Release(ctx)
}

// claimNamedElsewhere turns a device-plugin node away from a pod whose
// status names a claim for a card count of HAMi's: an earlier placement
// on a DRA node wrote it and was not bound (the claim is deleted in
// PreFilter), and no update clears that status. A 1.37 kubelet prepares
// the claim named there wherever the pod runs, so the pod can only run
// where PreBind names its new claim instead: a DRA node.
// detail names the claim.
func (p *Plugin) claimNamedElsewhere(pod *corev1.Pod, fit *nodeFit) (st *fwk.Status, detail string) {
	status := pod.Status.ExtendedResourceClaimStatus
	if fit.onDRA || !fit.asksAny() || status == nil {
		return nil, ""
	}
	for _, m := range status.RequestMappings {
		for _, v := range p.registry.Vendors() {
			if corev1.ResourceName(m.ResourceName) == v.Resources().Count {
				return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "the pod's status names a ResourceClaim of an earlier placement: DRA nodes only"),
					"the pod's status names ResourceClaim " + status.ResourceClaimName
			}
		}
	}
	return nil, ""
}
