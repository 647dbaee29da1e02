package e2e

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	hamiv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

var (
	chaosSeeds = flag.Int("chaos-seeds", 1, "how many seeds TestChaos runs (make test-chaos: 10)")
	chaosSeed  = flag.Uint64("chaos-seed", 0, "run TestChaos with this one seed (replays a failure); 0: seeds 1..chaos-seeds")
	chaosPods  = flag.Int("chaos-pods", 60, "pods per TestChaos seed")
)

// TestChaos creates a burst of GPU pods of mixed shapes (multi-card,
// multi-container, init containers) onto simulated nodes while, at seeded
// moments, the scheduler is killed and restarted, the node agent fails
// allocations, pods are deleted mid-bind, a node's device plugin stops and
// comes back, a card is cordoned, and a lock is left behind by a pod that
// never existed. Then, from the API: no card is over-committed, every pod is
// running, failed by its allocation, or pending with a reason, no lock is
// left, and the scheduler's device cache equals what the pods' annotations
// say. Some of the pods come as gangs (scheduler-plugins PodGroups of two
// or three members): no gang stays partly bound with cards held for its
// members not bound (checkNoPartialGang). Half the nodes run a DRA driver
// instead of HAMi's device plugin (HAMi's, and one NVIDIA's), taking the
// same pods and gangs as claims hami-scheduler allocates; node deletions
// hit them too, the device plugin's and node lock's faults only the
// device-plugin nodes. On DRA nodes (checkDRAClaims): no card
// over-committed by its claims, no pod counted on both kinds, no claim
// left allocated or reserved for a pod that is gone, and every running
// pod with one claim, allocated and reserved, consuming what it asked.
// Each run logs its seed and faults; -chaos-seed replays one.
func TestChaos(t *testing.T) {
	seeds := []uint64{}
	if *chaosSeed != 0 {
		seeds = append(seeds, *chaosSeed)
	} else {
		for s := 1; s <= *chaosSeeds; s++ {
			seeds = append(seeds, uint64(s))
		}
	}
	t.Cleanup(func() { restartScheduler(t, nil) })
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) { runChaos(t, seed, *chaosPods) })
	}
}

// chaosArgs give restarted schedulers a shorter lock expiry than HAMi's 5
// minutes, so that locks a killed scheduler or a phantom pod left behind
// are taken over within the test; it stays well above a loaded device
// plugin's round trip (an expiry shorter than that lets the next pod take
// over a lock the device plugin is still serving, as in HAMi).
// chaosNodes are the suite's nodes: device-plugin ones, and DRA ones of
// HAMi's driver and of NVIDIA's, all of the same cards.
const chaosNodes = "3 nodes x 2 cards of NVIDIA A100 40 GiB, split 10; " +
	"2 nodes x 2 cards of NVIDIA A100 40 GiB, dra; 1 node x 2 cards of NVIDIA A100 40 GiB, dra nvidia"

var chaosArgs = &hamiv1.HAMiArgs{NodeLockExpiry: &metav1.Duration{Duration: 20 * time.Second}}

func runChaos(t *testing.T, seed uint64, pods int) {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	restartScheduler(t, chaosArgs)
	startClaimControllers(t)
	e := newEnv(t, fmt.Sprintf("chaos%d", seed))
	nodes := e.addNodes(chaosNodes, nil)
	draNodes := map[string]bool{}
	for _, n := range nodes {
		if isDRANode(n) {
			draNodes[n.Name] = true
		}
	}
	// pluginNode is a random device-plugin node still there, for the
	// faults of HAMi's device plugin and node lock.
	pluginNode := func() *corev1.Node {
		var ns []*corev1.Node
		for _, n := range nodes {
			if !draNodes[n.Name] {
				ns = append(ns, n)
			}
		}
		if len(ns) == 0 {
			return nil
		}
		return ns[rng.IntN(len(ns))]
	}
	var faults []string
	fault := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		faults = append(faults, msg)
		t.Logf("seed %d fault: %s", seed, msg)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replay with: go test ./test/e2e -run 'TestChaos' -args -chaos-seed=%d -chaos-pods=%d (faults: %s)", seed, pods, strings.Join(faults, "; "))
		}
	})
	failing := map[string]bool{}
	deleted := map[string]bool{}
	gangs := map[string][]string{}
	goneNodes := map[string]bool{}
	for i := 0; i < pods; i++ {
		name := fmt.Sprintf("p%03d", i)
		if rng.IntN(15) == 0 {
			agent.FailPod(e.ns, name)
			failing[name] = true
			fault("the device plugin fails %s", name)
		}
		if rng.IntN(6) == 0 {
			gang := "g" + name
			gangs[gang] = createChaosGang(e, rng, gang, 2+rng.IntN(2))
		} else {
			e.create(chaosPod(e, rng, name))
		}
		if i%10 != 9 {
			continue
		}
		switch rng.IntN(8) {
		case 0:
			fault("scheduler killed and restarted after %d pods", i+1)
			restartScheduler(t, chaosArgs)
		case 1:
			victim := fmt.Sprintf("p%03d", rng.IntN(i+1))
			if members, ok := gangs["g"+victim]; ok {
				victim = members[0]
			}
			fault("%s deleted", victim)
			e.deletePod(victim)
			deleted[victim] = true
		case 2:
			if n := pluginNode(); n != nil && leavePhantomLock(t, e, n.Name) {
				fault("stale lock of a phantom pod on %s", n.Name)
			}
		case 3:
			n := pluginNode()
			if n == nil {
				break
			}
			fault("device plugin of %s stops for a while", n.Name)
			setCardCount(t, e, n.Name, 0)
			time.AfterFunc(time.Duration(500+rng.IntN(1500))*time.Millisecond, func() { setCardCount(t, e, n.Name, 20) })
		case 4:
			n := pluginNode()
			if n == nil {
				break
			}
			fault("card 0 of %s cordoned", n.Name)
			patchNode(t, e, n.Name, `{"metadata":{"annotations":{"`+devices.DeviceCordon+`":"`+cardUUID(n, 0)+`"}}}`)
		case 5:
			n := pluginNode()
			if n == nil {
				break
			}
			split := 10 + rng.IntN(6)
			fault("device plugin of %s re-registers its cards with split count %d", n.Name, split)
			reRegister(t, e, n.Name, split)
		case 6:
			if len(nodes) > 3 {
				k := rng.IntN(len(nodes))
				n := nodes[k]
				nodes = append(nodes[:k:k], nodes[k+1:]...)
				fault("node %s deleted with its pods", n.Name)
				deleteNodeAndPods(t, e, n.Name)
				goneNodes[n.Name] = true
			}
		}
	}
	settled := func() (bool, string) {
		if s := sched.Plugin().Cache().Stats(); s.AssumedPods > 0 {
			return false, fmt.Sprintf("%d pods still in a binding cycle", s.AssumedPods)
		}
		for _, p := range e.pods() {
			if p.DeletionTimestamp != nil {
				return false, p.Name + " terminating"
			}
			if goneNodes[p.Spec.NodeName] {
				// Bound while its node was being deleted: the pod
				// garbage collector deletes such orphans.
				forceDelete(t, e, p.Name)
				return false, p.Name + " bound to deleted node " + p.Spec.NodeName
			}
			switch {
			case p.Status.Phase == corev1.PodRunning:
			case p.Status.Phase == corev1.PodFailed && failing[p.Name]:
			case p.Spec.NodeName == "" && unschedulable(&p):
			default:
				return false, describe(&p)
			}
		}
		return true, ""
	}
	if err := wait.PollUntilContextTimeout(e.ctx, 200*time.Millisecond, 3*waitLimit, true, func(context.Context) (bool, error) {
		ok, _ := settled()
		return ok, nil
	}); err != nil {
		_, last := settled()
		for _, p := range draClaimProblems(t, e, draNodes) {
			t.Errorf("DRA, before settling: %s", p)
		}
		t.Logf("claims: %s", describeClaims(t, e))
		t.Fatalf("pods never settled (running, failed by their allocation, or pending with a reason and no binding in flight): %s; its last event: %s",
			last, e.lastEvent(strings.Fields(last)[0]))
	}
	e.checkAccounting()
	for _, n := range nodes {
		e.checkNodeUnlocked(n.Name)
	}
	checkCacheMatchesAPI(t, e)
	checkNoPartialGang(t, e, gangs, deleted)
	checkDRAClaims(t, e, draNodes)
	checkNoDRAViolation(t, e)
	t.Logf("seed %d: %d pods, faults: %s", seed, pods, strings.Join(faults, "; "))
}

// chaosPod is a pod of a random shape: 1-2 cards, 1000-12000 MiB, maybe a
// second container, maybe an init container.
func chaosPod(e *env, rng *rand.Rand, name string) *corev1.Pod {
	main := gpu{name: "main", cards: int64(1 + rng.IntN(2)), memory: int64(1000 * (1 + rng.IntN(12))), cores: int64(5 * rng.IntN(5))}
	containers := []gpu{main}
	if rng.IntN(4) == 0 {
		containers = append(containers, gpu{name: "side", cards: 1, memory: 1000})
	}
	p := e.pod(name, containers...)
	if rng.IntN(4) == 0 {
		p.Spec.InitContainers = e.pod("", gpu{name: "prepare", cards: 1, memory: int64(1000 * (1 + rng.IntN(8)))}).Spec.Containers
	}
	return p
}

// createChaosGang creates a PodGroup of n members of one random shape,
// each waiting at most 10 s for the others.
func createChaosGang(e *env, rng *rand.Rand, gang string, n int) []string {
	e.createPodGroup(gang, int32(n), 10)
	shape := chaosPod(e, rng, "")
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("%s-%d", gang, i)
		p := shape.DeepCopy()
		p.Name = names[i]
		e.create(member(p, gang))
	}
	return names
}

// checkNoPartialGang fails the test when a gang stays partly bound with
// cards held for its members not bound: once the suite settles, each gang
// has no member bound, or all of them bound (or removed by a fault, which
// may have taken a bound member, or its node did), or, left partly bound
// by a fault, its members not bound hold nothing: no card in the
// scheduler's cache, no assignment still handed over on their pod. A
// member still pending counts as pending, whatever node a fault deleted
// under its last hand-over.
func checkNoPartialGang(t *testing.T, e *env, gangs map[string][]string, deleted map[string]bool) {
	t.Helper()
	byName := map[string]corev1.Pod{}
	for _, p := range e.pods() {
		byName[p.Name] = p
	}
	held := map[string]bool{}
	for _, h := range sched.Plugin().Cache().AllHoldings() {
		if h.Namespace == e.ns {
			held[h.Name] = true
		}
	}
	var partial []string
	for gang, members := range gangs {
		bound, gone := 0, 0
		var pending []string
		for _, m := range members {
			p, ok := byName[m]
			switch {
			case !ok || deleted[m]:
				gone++
			case p.Spec.NodeName != "":
				bound++
			default:
				pending = append(pending, m)
			}
		}
		if bound == 0 || len(pending) == 0 {
			continue
		}
		partial = append(partial, fmt.Sprintf("%s (%d of %d bound, %d removed, pending %v)", gang, bound, len(members), gone, pending))
		for _, m := range pending {
			p := byName[m]
			if held[m] || p.Annotations[devices.BindPhase] == devices.BindPhaseAllocating {
				t.Errorf("gang %s: %d of %d members bound (%d removed by faults), and %s, not bound, holds cards: %s", gang, bound, len(members), gone, m, describe(&p))
			}
		}
	}
	if len(partial) > 0 {
		sort.Strings(partial)
		t.Logf("gangs left partly bound by faults, their members not bound holding nothing: %s", strings.Join(partial, "; "))
	}
}

func unschedulable(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// leavePhantomLock puts a lock naming a pod that never existed on the node,
// as a crashed device plugin leaves one behind, but only when nobody holds
// the node's lock (an update guarded by the node's resourceVersion).
func leavePhantomLock(t *testing.T, e *env, node string) bool {
	t.Helper()
	n, err := controlPlane.Client.CoreV1().Nodes().Get(e.ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Errorf("get node %s: %v", node, err)
		return false
	}
	if _, held := n.Annotations["hami.io/mutex.lock"]; held {
		return false
	}
	n.Annotations["hami.io/mutex.lock"] = time.Now().UTC().Format(time.RFC3339) + "," + e.ns + ",phantom"
	_, err = controlPlane.Client.CoreV1().Nodes().Update(e.ctx, n, metav1.UpdateOptions{})
	return err == nil
}

func patchNode(t *testing.T, e *env, node, patch string) {
	t.Helper()
	if _, err := controlPlane.Client.CoreV1().Nodes().Patch(e.ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Errorf("patch node %s: %v", node, err)
	}
}

// setCardCount sets the node's allocatable card count, as its device
// plugin does when it stops or comes back; a node a later fault deleted
// meanwhile is left alone.
func setCardCount(t *testing.T, e *env, node string, count int) {
	patch := fmt.Sprintf(`{"status":{"allocatable":{%q:"%d"}}}`, nvidia.DefaultCountName, count)
	_, err := controlPlane.Client.CoreV1().Nodes().Patch(e.ctx, node, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("set %s allocatable on %s: %v", nvidia.DefaultCountName, node, err)
	}
}

// reRegister rewrites the node's register annotation with another split
// count, as a device plugin restarted with a new deviceSplitCount does.
func reRegister(t *testing.T, e *env, node string, split int) {
	t.Helper()
	n, err := controlPlane.Client.CoreV1().Nodes().Get(e.ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Errorf("get node %s: %v", node, err)
		return
	}
	var cards []map[string]any
	if err := json.Unmarshal([]byte(n.Annotations[nvidia.RegisterAnnotation]), &cards); err != nil {
		t.Errorf("node %s register: %v", node, err)
		return
	}
	for _, c := range cards {
		c["count"] = split
	}
	raw, err := json.Marshal(cards)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{nvidia.RegisterAnnotation: string(raw)}}})
	if err != nil {
		t.Fatal(err)
	}
	patchNode(t, e, node, string(patch))
}

// deleteNodeAndPods deletes a node and, as the pod garbage collector does
// for pods of a deleted node, its pods (pods bound to it later, while
// their binding was in flight, are collected while the suite settles).
func deleteNodeAndPods(t *testing.T, e *env, node string) {
	t.Helper()
	if err := controlPlane.Client.CoreV1().Nodes().Delete(e.ctx, node, metav1.DeleteOptions{}); err != nil {
		t.Errorf("delete node %s: %v", node, err)
	}
	for _, p := range e.pods() {
		if p.Spec.NodeName == node {
			forceDelete(t, e, p.Name)
		}
	}
}

// forceDelete deletes the pod at once, as the pod garbage collector
// deletes the pods of a node that no longer exists.
func forceDelete(t *testing.T, e *env, name string) {
	t.Helper()
	err := controlPlane.Client.CoreV1().Pods(e.ns).Delete(e.ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete pod %s: %v", name, err)
	}
}

func cardUUID(n *corev1.Node, i int) string {
	cards, err := devices.DecodeInventory(n.Annotations[nvidia.RegisterAnnotation])
	if err != nil || i >= len(cards) {
		return ""
	}
	return cards[i].UUID
}

// checkCacheMatchesAPI compares the running scheduler's device cache with
// the usage the pods' annotations give, card by card.
func checkCacheMatchesAPI(t *testing.T, e *env) {
	t.Helper()
	cache := sched.Plugin().Cache()
	for _, c := range e.checkAccounting() {
		cards, used, err := cache.Snapshot(c.Node, 0, nil)
		if err != nil {
			t.Errorf("cache snapshot of %s: %v", c.Node, err)
			continue
		}
		for i := range cards {
			if cards[i].UUID == c.UUID && used[i] != c.Used {
				t.Errorf("card %s of %s: cache holds %+v, the API says %+v", c.UUID, c.Node, used[i], c.Used)
			}
		}
	}
}
