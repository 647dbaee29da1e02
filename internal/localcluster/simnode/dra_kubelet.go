package simnode

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	resourcev1client "k8s.io/client-go/kubernetes/typed/resource/v1"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/kubernetes/pkg/features"
)

// draManager is a simulated node's kubelet DRA manager, as 1.37's
// (pkg/kubelet/cm/dra/manager.go PrepareResources and
// UnprepareResources): the claim info cache and the DRA driver registered
// with the kubelet (none on a device-plugin node). Its API calls go
// through the kubelet's client.
type draManager struct {
	node    string
	kubelet resourcev1client.ResourceV1Interface

	mu sync.Mutex
	// driver is the registered DRA driver, nil when none is.
	driver *draDriver
	// claims is the claim info cache, by namespace/name.
	claims map[string]*claimInfo
	// ended are the pods whose claims were unprepared (their containers
	// stopped): the kubelet's pod worker runs a pod's sync and its
	// termination one after the other, so a sync that resolved its
	// claims before the pod ended prepares nothing for it after.
	ended sets.Set[types.UID]
}

// claimInfo is one cached claim: the pods using it and, once prepared,
// what its driver prepared.
type claimInfo struct {
	uid       types.UID
	namespace string
	name      string
	// drivers are the drivers whose NodePrepareResources the claim needs.
	drivers []string
	pods    sets.Set[types.UID]
	// prepared is set once every driver prepared the claim.
	prepared bool
	devices  []PreparedDevice
}

func newDRAManager(node string, kubelet resourcev1client.ResourceV1Interface) *draManager {
	return &draManager{node: node, kubelet: kubelet, claims: map[string]*claimInfo{}, ended: sets.New[types.UID]()}
}

// registered is the driver of that name registered with the kubelet
// (DRAPluginManager.GetPlugin).
func (m *draManager) registered(name string) (*draDriver, error) {
	if name == "" {
		return nil, errors.New("DRA driver name is empty")
	}
	if m.driver == nil || m.driver.model.driver != name {
		return nil, fmt.Errorf("DRA driver %s is not registered", name)
	}
	return m.driver, nil
}

// podResourceClaims are the claims the kubelet prepares for the pod: its
// spec.resourceClaims and, with DRAExtendedResource, the claim
// kube-scheduler wrote into status.extendedResourceClaimStatus.
func podResourceClaims(pod *corev1.Pod) []corev1.PodResourceClaim {
	claims := pod.Spec.ResourceClaims
	if utilfeature.DefaultFeatureGate.Enabled(features.DRAExtendedResource) && pod.Status.ExtendedResourceClaimStatus != nil {
		claims = append(slices.Clone(claims), corev1.PodResourceClaim{ResourceClaimName: &pod.Status.ExtendedResourceClaimStatus.ResourceClaimName})
	}
	return claims
}

// hasDynamicResources reports whether the kubelet has claims to prepare
// for the pod.
func hasDynamicResources(pod *corev1.Pod) bool { return len(podResourceClaims(pod)) > 0 }

// resolvedClaim is a claim read and checked in the validation pass.
type resolvedClaim struct {
	claim   *resourceapi.ResourceClaim
	drivers []string
}

// prepareResources is the kubelet's PrepareResources: a validation pass
// that changes nothing (every claim's name resolved, through
// status.resourceClaimStatuses for template claims; the claim read from
// the API; a generated claim owned by the pod; the pod in its
// status.reservedFor; allocated; each driver it needs registered), then
// the pod referenced in each claim's cache entry, then one
// NodePrepareResources per driver for the claims not yet prepared. Any
// error fails the pod's sync (the caller records
// FailedPrepareDynamicResources and retries); the errors are the
// kubelet's.
func (m *draManager) prepareResources(ctx context.Context, pod *corev1.Pod) error {
	resolved, err := m.resolveClaims(ctx, pod)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ended.Has(pod.UID) {
		return fmt.Errorf("pod %s (%s) has ended: its claims are not prepared", pod.Name, pod.UID)
	}
	var batch []*claimInfo
	for _, r := range resolved {
		key := r.claim.Namespace + "/" + r.claim.Name
		info, ok := m.claims[key]
		switch {
		case !ok:
			info = &claimInfo{uid: r.claim.UID, namespace: r.claim.Namespace, name: r.claim.Name, drivers: r.drivers, pods: sets.New[types.UID]()}
			m.claims[key] = info
		case info.uid != r.claim.UID:
			return fmt.Errorf("old ResourceClaim with same name %s and different UID %s still exists (previous pod force-deleted?!)", r.claim.Name, info.uid)
		}
		info.pods.Insert(pod.UID)
		if !info.prepared {
			batch = append(batch, info)
		}
	}
	return m.prepareBatch(ctx, batch)
}

// resolveClaims is the validation pass of prepareResources.
func (m *draManager) resolveClaims(ctx context.Context, pod *corev1.Pod) ([]resolvedClaim, error) {
	var out []resolvedClaim
	podGroups := utilfeature.DefaultFeatureGate.Enabled(features.DRAWorkloadResourceClaims)
	for _, podClaim := range podResourceClaims(pod) {
		name, mustCheckOwner, err := resourceclaim.Name(pod, &podClaim)
		if err != nil {
			return nil, err
		}
		if name == nil {
			continue
		}
		claim, err := m.kubelet.ResourceClaims(pod.Namespace).Get(ctx, *name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("fetch ResourceClaim %s: %w", *name, err)
		}
		if mustCheckOwner {
			if err := resourceclaim.IsForPod(pod, claim, podGroups); err != nil {
				return nil, err
			}
		}
		if !resourceclaim.IsReservedForPod(pod, claim, podGroups) {
			return nil, fmt.Errorf("pod %s (%s) is not allowed to use ResourceClaim %s (%s)", pod.Name, pod.UID, *name, claim.UID)
		}
		if claim.Status.Allocation == nil {
			return nil, fmt.Errorf("ResourceClaim %s: not allocated", claim.Name)
		}
		drivers, err := preparingDrivers(claim)
		if err != nil {
			return nil, fmt.Errorf("ResourceClaim %s: %w", claim.Name, err)
		}
		m.mu.Lock()
		for _, d := range drivers {
			if _, err := m.registered(d); err != nil {
				m.mu.Unlock()
				return nil, err
			}
		}
		m.mu.Unlock()
		out = append(out, resolvedClaim{claim: claim, drivers: drivers})
	}
	return out, nil
}

// preparingDrivers are the drivers of the claim's results whose
// NodePrepareResources the kubelet calls: all but those every result of
// which skips it (SkipNodeOperations, refused unless DRAOptionalNodeOperations
// is on), in name order.
func preparingDrivers(claim *resourceapi.ResourceClaim) ([]string, error) {
	total, skipping, skippingAll := map[string]int{}, map[string]int{}, map[string]int{}
	for _, r := range claim.Status.Allocation.Devices.Results {
		total[r.Driver]++
		switch {
		case slices.Contains(r.SkipNodeOperations, resourceapi.SkipNodeOperationAll):
			skippingAll[r.Driver]++
		case slices.Contains(r.SkipNodeOperations, resourceapi.SkipNodeOperationNodePrepareResources):
			skipping[r.Driver]++
		}
	}
	var out []string
	for driver, n := range total {
		skipped := skippingAll[driver] == n || skipping[driver]+skippingAll[driver] == n
		if (skipping[driver] > 0 || skippingAll[driver] > 0) && !utilfeature.DefaultFeatureGate.Enabled(features.DRAOptionalNodeOperations) {
			return nil, errors.New("DRAOptionalNodeOperations feature gate is disabled on kubelet")
		}
		if !skipped {
			out = append(out, driver)
		}
	}
	slices.Sort(out)
	return out, nil
}

// prepareBatch calls each driver's NodePrepareResources for the claims
// (called with m.mu held) and marks them prepared once all succeed.
func (m *draManager) prepareBatch(ctx context.Context, batch []*claimInfo) error {
	byDriver := map[string][]*claimInfo{}
	for _, info := range batch {
		for _, d := range info.drivers {
			byDriver[d] = append(byDriver[d], info)
		}
	}
	devices := map[types.UID][]PreparedDevice{}
	for driverName, infos := range byDriver {
		driver, err := m.registered(driverName)
		if err != nil {
			return err
		}
		refs := make([]claimRef, len(infos))
		for i, info := range infos {
			refs[i] = claimRef{namespace: info.namespace, name: info.name, uid: info.uid}
		}
		prepared, failures, err := driver.nodePrepareResources(ctx, refs)
		if err != nil {
			return fmt.Errorf("NodePrepareResources: %w", err)
		}
		for _, info := range infos {
			if err := failures[info.uid]; err != nil {
				return fmt.Errorf("NodePrepareResources failed for ResourceClaim %s: %w", info.name, err)
			}
			devices[info.uid] = append(devices[info.uid], prepared[info.uid]...)
		}
	}
	for _, info := range batch {
		info.devices, info.prepared = devices[info.uid], true
	}
	return nil
}

// unprepareResources drops the pod from the claims it uses and
// unprepares each claim no other pod uses (the driver forgets it), as the
// kubelet does once the pod's containers stopped. It calls no API.
func (m *draManager) unprepareResources(podUID types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ended.Insert(podUID)
	for key, info := range m.claims {
		if !info.pods.Has(podUID) {
			continue
		}
		info.pods.Delete(podUID)
		if info.pods.Len() > 0 {
			continue
		}
		if m.driver != nil && slices.Contains(info.drivers, m.driver.model.driver) {
			m.driver.nodeUnprepareResources(info.uid)
		}
		delete(m.claims, key)
	}
}

// containerDevices is what each container of the pod gets from its
// prepared claims (the kubelet's GetResources): the devices of the claims
// its resources.claims name (of the request named, when one is, its
// subrequests included) and of the extended-resource claim's requests
// status.extendedResourceClaimStatus maps to it. Containers without
// devices are left out.
func (m *draManager) containerDevices(pod *corev1.Pod) map[string][]PreparedDevice {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]PreparedDevice{}
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		var got []PreparedDevice
		for _, ref := range c.Resources.Claims {
			i := slices.IndexFunc(pod.Spec.ResourceClaims, func(pc corev1.PodResourceClaim) bool { return pc.Name == ref.Name })
			if i < 0 {
				continue
			}
			name, _, err := resourceclaim.Name(pod, &pod.Spec.ResourceClaims[i])
			if err != nil || name == nil {
				continue
			}
			got = append(got, m.claimDevices(pod.Namespace+"/"+*name, ref.Request)...)
		}
		if s := pod.Status.ExtendedResourceClaimStatus; s != nil && utilfeature.DefaultFeatureGate.Enabled(features.DRAExtendedResource) {
			for _, rm := range s.RequestMappings {
				if rm.ContainerName == c.Name {
					got = append(got, m.claimDevices(pod.Namespace+"/"+s.ResourceClaimName, rm.RequestName)...)
				}
			}
		}
		if len(got) > 0 {
			out[c.Name] = got
		}
	}
	return out
}

// claimDevices are the prepared devices of the cached claim serving the
// request ("": all of them).
func (m *draManager) claimDevices(key, request string) []PreparedDevice {
	info, ok := m.claims[key]
	if !ok || !info.prepared {
		return nil
	}
	var out []PreparedDevice
	for _, d := range info.devices {
		if request == "" || d.Request == request || strings.HasPrefix(d.Request, request+"/") {
			out = append(out, d)
		}
	}
	return out
}
