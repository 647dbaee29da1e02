package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/dra"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

// chaosDRASplit is how many containers may share one DRA card: HAMi's
// default deviceSplitCount, which the scheduler applies to DRA cards (a
// DRA driver sets no such bound).
const chaosDRASplit = 10

// startClaimControllers runs kube-controller-manager's resource claim
// controller and garbage collector for the test, as a cluster with DRA
// nodes has them: a claim owned by a deleted pod is released, deallocated
// and deleted, and a deleted node's ResourceSlices go with it.
func startClaimControllers(t *testing.T) {
	t.Helper()
	cs, err := localcluster.StartControllers(context.Background(), controlPlane.Config)
	if err != nil {
		t.Fatalf("start controllers: %v", err)
	}
	t.Cleanup(cs.Stop)
}

func isDRANode(n *corev1.Node) bool {
	_, ok := n.Labels[simnode.DRADriverLabel]
	return ok
}

// checkDRAClaims fails the test, naming the claim, pod or card, unless,
// within waitLimit (the resource claim controller and the garbage
// collector act asynchronously), the claims of the test's DRA nodes
// (draNodes: every DRA node the test made, deleted ones included) hold:
//   - no card over-committed: on each DRA card the allocated claims'
//     consumedCapacity (memory, cores) is within its capacity, and at most
//     chaosDRASplit shares take it;
//   - no pod counted on both kinds: a pod bound to a device-plugin node
//     has no claim of hami-scheduler's, one on a DRA node no HAMi
//     assignment;
//   - no claim allocated or reserved for a pod that no longer exists (its
//     node deleted, or itself), nor for a pod not bound to the claim's
//     node; no slice left of a deleted node;
//   - every Running pod on a DRA node has exactly one claim of
//     hami-scheduler's, named in its status, allocated on its node and
//     reserved for it, consuming on each card what its container asked
//     (memory in bytes, cores where the driver shares them).
func checkDRAClaims(t *testing.T, e *env, draNodes map[string]bool) {
	t.Helper()
	var problems []string
	err := wait.PollUntilContextTimeout(e.ctx, 200*time.Millisecond, waitLimit, true, func(ctx context.Context) (bool, error) {
		problems = draClaimProblems(t, e, draNodes)
		return len(problems) == 0, nil
	})
	if err != nil {
		for _, p := range problems {
			t.Errorf("DRA: %s", p)
		}
	}
}

// draClaimProblems reads the pods, claims, slices and nodes once and says
// what of checkDRAClaims does not hold.
func draClaimProblems(t *testing.T, e *env, draNodes map[string]bool) []string {
	t.Helper()
	client := controlPlane.Client
	pods := e.pods()
	claimList, err := client.ResourceV1().ResourceClaims(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sliceList, err := client.ResourceV1().ResourceSlices().List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodeList, err := client.CoreV1().Nodes().List(e.ctx, metav1.ListOptions{LabelSelector: groupLabel + "=" + e.group})
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]bool{}
	for _, n := range nodeList.Items {
		live[n.Name] = true
	}
	var problems []string
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	capacity := map[dra.DeviceKey]map[resourceapi.QualifiedName]int64{}
	for _, s := range sliceList.Items {
		if s.Spec.NodeName == nil || !draNodes[*s.Spec.NodeName] {
			continue
		}
		if !live[*s.Spec.NodeName] {
			problem("ResourceSlice %s of deleted node %s is still there", s.Name, *s.Spec.NodeName)
			continue
		}
		for _, d := range s.Spec.Devices {
			key := dra.DeviceKey{Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name, Device: d.Name}
			capacity[key] = map[resourceapi.QualifiedName]int64{}
			for name, v := range d.Capacity {
				capacity[key][name] = v.Value.Value()
			}
		}
	}

	byUID := map[types.UID]*corev1.Pod{}
	for i := range pods {
		byUID[pods[i].UID] = &pods[i]
	}
	claimsOf := map[types.UID][]*resourceapi.ResourceClaim{}
	used := map[dra.DeviceKey]map[resourceapi.QualifiedName]int64{}
	shares := map[dra.DeviceKey][]string{}
	for i := range claimList.Items {
		claim := &claimList.Items[i]
		owner := metav1.GetControllerOf(claim)
		if claim.Labels[dra.ClaimLabel] == "true" && owner != nil {
			claimsOf[owner.UID] = append(claimsOf[owner.UID], claim)
		}
		for _, r := range claim.Status.ReservedFor {
			if p := byUID[r.UID]; p == nil {
				problem("claim %s is reserved for pod %s (%s), which no longer exists", claim.Name, r.Name, r.UID)
			}
		}
		if claim.Status.Allocation == nil {
			continue
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			key := dra.DeviceKey{Driver: r.Driver, Pool: r.Pool, Device: r.Device}
			if owner != nil {
				switch p := byUID[owner.UID]; {
				case p == nil && !live[r.Pool]:
					problem("claim %s is allocated on %s/%s for pod %s, which is gone with its deleted node", claim.Name, r.Pool, r.Device, owner.Name)
				case p == nil:
					problem("claim %s is allocated on %s/%s for pod %s, which no longer exists", claim.Name, r.Pool, r.Device, owner.Name)
				case p.Spec.NodeName != r.Pool:
					problem("claim %s is allocated on %s/%s for pod %s, bound to %q", claim.Name, r.Pool, r.Device, p.Name, p.Spec.NodeName)
				}
			}
			if used[key] == nil {
				used[key] = map[resourceapi.QualifiedName]int64{}
			}
			for name, v := range r.ConsumedCapacity {
				used[key][name] += v.Value()
			}
			shares[key] = append(shares[key], claim.Name)
		}
	}
	for key, u := range used {
		have, published := capacity[key]
		if !published {
			if live[key.Pool] {
				problem("claims %v hold card %s/%s, which its node does not publish", shares[key], key.Pool, key.Device)
			}
			continue
		}
		for name, v := range u {
			if v > have[name] {
				problem("card %s/%s over-committed: %s %d of %d, by claims %v", key.Pool, key.Device, name, v, have[name], shares[key])
			}
		}
		if len(shares[key]) > chaosDRASplit {
			problem("card %s/%s shared by %d containers, more than its split count %d: claims %v", key.Pool, key.Device, len(shares[key]), chaosDRASplit, shares[key])
		}
	}

	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" {
			continue
		}
		onDRA := draNodes[p.Spec.NodeName]
		if !onDRA {
			if len(claimsOf[p.UID]) > 0 || p.Status.ExtendedResourceClaimStatus != nil {
				problem("pod %s on device-plugin node %s has claims %v (status %+v): counted on both kinds", p.Name, p.Spec.NodeName, claimNames(claimsOf[p.UID]), p.Status.ExtendedResourceClaimStatus)
			}
			continue
		}
		for _, k := range []string{nvidia.AllocatedAnnotation, nvidia.ToAllocateAnnotation, devices.BindPhase} {
			if v, found := p.Annotations[k]; found {
				problem("pod %s on DRA node %s carries %s=%q: counted on both kinds", p.Name, p.Spec.NodeName, k, v)
			}
		}
		if p.Status.Phase == corev1.PodRunning {
			problems = append(problems, runningDRAPodProblems(p, claimsOf[p.UID], capacity)...)
		}
	}
	sort.Strings(problems)
	return problems
}

// runningDRAPodProblems checks a Running pod on a DRA node against its
// claims: exactly one, named in its status, allocated on its node,
// reserved for it, one result per card each of its containers asked,
// each consuming the container's memory (bytes) and, where the driver
// shares them, cores. capacity gives a card's memory for exclusive use on
// a driver that shares memory only.
func runningDRAPodProblems(p *corev1.Pod, claims []*resourceapi.ResourceClaim, capacity map[dra.DeviceKey]map[resourceapi.QualifiedName]int64) []string {
	var problems []string
	problem := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf("running pod %s on %s: ", p.Name, p.Spec.NodeName)+fmt.Sprintf(format, args...))
	}
	if len(claims) != 1 {
		problem("has claims %v, want exactly one", claimNames(claims))
		return problems
	}
	claim := claims[0]
	status := p.Status.ExtendedResourceClaimStatus
	if status == nil || status.ResourceClaimName != claim.Name {
		problem("status names claim %+v, want %s", status, claim.Name)
		return problems
	}
	if !slices.ContainsFunc(claim.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool { return r.UID == p.UID }) {
		problem("claim %s is reserved for %+v, not for it", claim.Name, claim.Status.ReservedFor)
	}
	if claim.Status.Allocation == nil {
		problem("claim %s is not allocated", claim.Name)
		return problems
	}
	container := map[string]string{}
	for _, m := range status.RequestMappings {
		container[m.RequestName] = m.ContainerName
	}
	got := map[string]int64{}
	for _, r := range claim.Status.Allocation.Devices.Results {
		name, ok := container[r.Request]
		c := containerNamed(p, name)
		if !ok || c == nil {
			problem("claim %s request %s maps to no container (%+v)", claim.Name, r.Request, status.RequestMappings)
			continue
		}
		got[name]++
		ask := func(res corev1.ResourceName) int64 {
			q := c.Resources.Limits[res]
			return q.Value()
		}
		driver, known := dra.DriverNamed(r.Driver)
		if !known {
			problem("claim %s result %s is of driver %s, which hami-scheduler does not place on", claim.Name, r.Request, r.Driver)
			continue
		}
		memory, cores := ask(nvidia.DefaultMemoryName)*dra.MiB, ask(nvidia.DefaultCoresName)
		if driver.Cores == "" && cores >= 100 {
			memory = capacity[dra.DeviceKey{Driver: r.Driver, Pool: r.Pool, Device: r.Device}][driver.Memory]
		}
		if q := r.ConsumedCapacity[driver.Memory]; q.Value() != memory {
			problem("claim %s result %s (container %s, card %s) consumes %s %s, want %d bytes", claim.Name, r.Request, name, r.Device, driver.Memory, q.String(), memory)
		}
		if driver.Cores != "" {
			if q := r.ConsumedCapacity[driver.Cores]; q.Value() != cores {
				problem("claim %s result %s (container %s, card %s) consumes %s %s, want %d", claim.Name, r.Request, name, r.Device, driver.Cores, q.String(), cores)
			}
		}
		if r.Pool != p.Spec.NodeName {
			problem("claim %s result %s is on %s/%s, not on its node", claim.Name, r.Request, r.Pool, r.Device)
		}
	}
	for _, c := range devices.Containers(p) {
		q := c.Resources.Limits[nvidia.DefaultCountName]
		if want := q.Value(); got[c.Name] != want {
			problem("claim %s gives container %s %d cards, want %d", claim.Name, c.Name, got[c.Name], want)
		}
	}
	return problems
}

func containerNamed(p *corev1.Pod, name string) *corev1.Container {
	for _, c := range devices.Containers(p) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func claimNames(claims []*resourceapi.ResourceClaim) []string {
	var names []string
	for _, c := range claims {
		names = append(names, c.Name)
	}
	return names
}

// describeClaims lists the namespace's allocated claims (device,
// consumed capacity, the pods they are reserved for), for a failure's
// message.
func describeClaims(t *testing.T, e *env) string {
	t.Helper()
	list, err := controlPlane.Client.ResourceV1().ResourceClaims(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, c := range list.Items {
		if c.Status.Allocation == nil {
			out = append(out, c.Name+" (not allocated)")
			continue
		}
		var reserved []string
		for _, r := range c.Status.ReservedFor {
			reserved = append(reserved, r.Name)
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			var consumed []string
			for name, q := range r.ConsumedCapacity {
				consumed = append(consumed, string(name)+"="+q.String())
			}
			sort.Strings(consumed)
			out = append(out, fmt.Sprintf("%s %s/%s %v for %v", c.Name, r.Pool, r.Device, consumed, reserved))
		}
	}
	sort.Strings(out)
	return fmt.Sprint(out)
}

// checkNoDRAViolation fails the test for each time a simulated kubelet
// refused one of the namespace's claims for what no real driver checks (a
// device over-committed by the claims prepared on it, not published, or
// of another node: simnode.ViolationError), naming the pod and claim,
// even when a later retry prepared it.
func checkNoDRAViolation(t *testing.T, e *env) {
	t.Helper()
	list, err := controlPlane.Client.CoreV1().Events(e.ns).List(e.ctx, metav1.ListOptions{FieldSelector: "reason=FailedPrepareDynamicResources"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range list.Items {
		if strings.Contains(ev.Message, "simulated node check") {
			t.Errorf("pod %s at %s: %s", ev.InvolvedObject.Name, ev.FirstTimestamp.Format(time.RFC3339Nano), ev.Message)
		}
	}
}
