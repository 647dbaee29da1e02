package batching

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	metricstestutil "k8s.io/component-base/metrics/testutil"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"

	hamiv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
	"github.com/hami-scheduler/hami-scheduler/scheduler/profile"
)

// nodes are cards of five sizes, two nodes of each, whose CPU and memory
// differ node by node (mutateNode): the plugins score them apart.
const nodes = "2 nodes x 4 cards of NVIDIA A100 40 GiB; 2 nodes x 8 cards of NVIDIA A10 24 GiB; " +
	"2 nodes x 2 cards of NVIDIA H100 80 GiB; 2 nodes x 4 cards of NVIDIA T4 16 GiB; 2 nodes x 6 cards of NVIDIA L40 48 GiB"

// shape is one kind of pod of the stream: cards (0: a plain pod) and what
// its one container asks; replica, when set, gives the i-th pod of the
// shape the annotations of its replica (a controller writes them per
// pod).
type shape struct {
	name                          string
	cards, memory, percent, cores int64
	cpu, mem                      string
	annotations                   map[string]string
	replica                       func(i int) map[string]string
}

// jobReplica and pytorchReplica are the per-replica annotations of an
// indexed Job's pods (batch.kubernetes.io/job-completion-index) and of a
// Kubeflow PyTorchJob's workers (training.kubeflow.org/replica-index and
// replica-type), which no plugin reads.
func jobReplica(i int) map[string]string {
	return map[string]string{"batch.kubernetes.io/job-completion-index": strconv.Itoa(i)}
}

func pytorchReplica(i int) map[string]string {
	return map[string]string{"training.kubeflow.org/replica-index": strconv.Itoa(i), "training.kubeflow.org/replica-type": "worker"}
}

var shapes = []shape{
	{name: "small", cards: 1, memory: 4000, cores: 10, cpu: "500m", mem: "1Gi"},
	{name: "half", cards: 1, memory: 12000, cores: 30, cpu: "1", mem: "2Gi"},
	{name: "two", cards: 2, memory: 6000, cores: 20, cpu: "2", mem: "4Gi"},
	{name: "quarter", cards: 1, percent: 25, cpu: "250m", mem: "512Mi"},
	{name: "spread", cards: 1, memory: 8000, cpu: "500m", mem: "1Gi", annotations: map[string]string{devices.NodePolicyAnnotation: "spread"}},
	{name: "job", cards: 1, memory: 6000, cores: 20, cpu: "500m", mem: "1Gi", replica: jobReplica},
	{name: "pytorch", cards: 2, memory: 10000, cores: 30, cpu: "2", mem: "4Gi", replica: pytorchReplica},
	{name: "plain", cpu: "1", mem: "2Gi"},
	{name: "plain-small", cpu: "250m", mem: "512Mi"},
	{name: "plain-big", cpu: "4", mem: "8Gi"},
}

// streamPod is one pod of the stream, in creation (and so scheduling)
// order; index is its place among the pods of its shape.
type streamPod struct {
	name  string
	shape shape
	index int
}

// mixedStream draws pods in runs of one to eight alike (replicas of one
// workload come in runs, which is what batching serves), device and plain
// pods mixed.
func mixedStream(seed uint64, n int) []streamPod {
	rng := rand.New(rand.NewPCG(seed, seed^0x5bd1e995))
	var out []streamPod
	index := map[string]int{}
	for len(out) < n {
		s := shapes[rng.IntN(len(shapes))]
		for range min(1+rng.IntN(8), n-len(out)) {
			out = append(out, streamPod{name: fmt.Sprintf("p-%03d", len(out)), shape: s, index: index[s.name]})
			index[s.name]++
		}
	}
	return out
}

// replicaStream is the pods of two workloads one after the other: an
// indexed Job of completions pods, then a PyTorchJob of as many workers.
func replicaStream(completions int) []streamPod {
	var out []streamPod
	for _, name := range []string{"job", "pytorch"} {
		for _, s := range shapes {
			if s.name != name {
				continue
			}
			for i := range completions {
				out = append(out, streamPod{name: fmt.Sprintf("p-%03d", len(out)), shape: s, index: i})
			}
		}
	}
	return out
}

// TestBatchingKeepsPlacements schedules one backlog of device and plain
// pods twice on identical clusters, with opportunistic batching off and
// on, and finds every pod on the same node; with batching on, device pods
// were placed from a batch (hints used outnumber the plain pods).
//
// Two departures from the shipped configuration make the placement a
// function of the pods alone: HAMi's queue bounds are off (nodeQueueLimit
// and nodeQueueWait 0, HAMi's order), since they rank nodes by how fast
// the simulated device plugins drain them; and the test's NodeRank plugin
// breaks ties between equal scores, which kube-scheduler breaks at random.
// The device plugins are faster than HAMi's (100 QPS) to keep the test
// short; how fast they are does not change where pods go here.
func TestBatchingKeepsPlacements(t *testing.T) {
	stream := mixedStream(7, 160)
	plain := 0
	for _, p := range stream {
		if p.shape.cards == 0 {
			plain++
		}
	}
	var off, on map[string]string
	var hintsOff, hintsOn float64
	t.Run("off", func(t *testing.T) { off, hintsOff = place(t, stream, false) })
	t.Run("on", func(t *testing.T) { on, hintsOn = place(t, stream, true) })
	if t.Failed() {
		return
	}
	var differ []string
	for _, p := range stream {
		if off[p.name] != on[p.name] {
			differ = append(differ, fmt.Sprintf("%s (%s): %s without batching, %s with", p.name, p.shape.name, off[p.name], on[p.name]))
		}
	}
	if len(differ) > 0 {
		t.Errorf("%d of %d pods placed elsewhere with batching:\n%s", len(differ), len(stream), strings.Join(differ, "\n"))
	}
	t.Logf("%d pods (%d plain); hints used: %v without batching, %v with", len(stream), plain, hintsOff, hintsOn)
	if hintsOff != 0 {
		t.Errorf("batching off, yet %v hints used", hintsOff)
	}
	if hintsOn <= float64(plain) {
		t.Errorf("batching on: %v hints used for %d plain pods, so no device pod was placed from a batch: the profile does not batch them", hintsOn, plain)
	}
}

// TestBatchingReplicas: the replicas of an indexed Job and of a
// PyTorchJob, device pods alike but for their per-replica annotations,
// are placed from a batch: the annotations no plugin reads do not set
// them apart. Of the 2 x (completions - 1) pods that could take a hint
// (every pod but the first of each workload), most do.
func TestBatchingReplicas(t *testing.T) {
	const completions = 16
	_, hints := place(t, replicaStream(completions), true)
	possible := 2 * (completions - 1)
	t.Logf("%d replica pods; hints used: %v of %d possible", 2*completions, hints, possible)
	if hints < float64(possible)*2/3 {
		t.Errorf("%v hints used for %d replica pods (%d possible): per-replica annotations keep the replicas out of one batch", hints, 2*completions, possible)
	}
}

// place runs the stream on a fresh cluster with batching on or off and
// returns each pod's node and the batch hints the profile used.
func place(t *testing.T, stream []streamPod, batching bool) (map[string]string, float64) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.OpportunisticBatching, batching)
	ctx := t.Context()
	cp, err := localcluster.Start(localcluster.Options{Log: logFile})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	agent, err := simnode.NewAgent(cp.Config, simnode.Options{Workers: 8, DevicePluginQPS: 100, DevicePluginBurst: 200})
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer agent.Stop()
	createNodes(t, ctx, cp)
	const ns = "batching"
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range stream {
		if _, err := cp.Client.CoreV1().Pods(ns).Create(ctx, pod(ns, p), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The backlog is in place before the scheduler starts: it queues the
	// pods in name order and takes them one after another.
	schedmetrics.Register()
	hints := schedmetrics.BatchAttemptStats.WithLabelValues(profile.SchedulerName, schedmetrics.BatchAttemptHintUsed)
	before, err := metricstestutil.GetCounterMetricValue(hints)
	if err != nil {
		t.Fatal(err)
	}
	noQueues := int32(0)
	sched, err := localcluster.StartScheduler(ctx, cp.Config, localcluster.SchedulerOptions{
		Args:    &hamiv1.HAMiArgs{NodeQueueLimit: &noQueues, NodeQueueWait: &metav1.Duration{}},
		Plugins: frameworkruntime.Registry{nodeRankName: newNodeRank, nameOrderName: newNameOrder},
		Profile: tieBroken,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Stop()
	placed := map[string]string{}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		clear(placed)
		for _, p := range list.Items {
			if p.Spec.NodeName != "" {
				placed[p.Name] = p.Spec.NodeName
			}
		}
		return len(placed) == len(stream), nil
	})
	if err != nil {
		t.Fatalf("%d of %d pods bound: %v", len(placed), len(stream), err)
	}
	after, err := metricstestutil.GetCounterMetricValue(hints)
	if err != nil {
		t.Fatal(err)
	}
	return placed, after - before
}

// createNodes creates the nodes, each with its own rank and its own CPU
// and memory.
func createNodes(t *testing.T, ctx context.Context, cp *localcluster.ControlPlane) {
	t.Helper()
	specs, err := simnode.ParseSpecs(nodes)
	if err != nil {
		t.Fatal(err)
	}
	var all []*corev1.Node
	for _, s := range specs {
		all = append(all, s.Build("node", len(all))...)
	}
	for i, n := range all {
		n.Labels[rankLabel] = strconv.Itoa((i * 37) % 100)
		for _, list := range []corev1.ResourceList{n.Status.Capacity, n.Status.Allocatable} {
			list[corev1.ResourceCPU] = *resource.NewQuantity(int64(16+6*i), resource.DecimalSI)
			list[corev1.ResourceMemory] = *resource.NewQuantity(int64(64+24*i)<<30, resource.BinarySI)
		}
	}
	if err := simnode.Create(ctx, cp.Client, all); err != nil {
		t.Fatal(err)
	}
}

func pod(ns string, p streamPod) *corev1.Pod {
	s := p.shape
	c := corev1.Container{Name: "main", Image: "cuda:sim", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(s.cpu), corev1.ResourceMemory: resource.MustParse(s.mem)},
	}}
	if s.cards > 0 {
		c.Resources.Limits = corev1.ResourceList{nvidia.DefaultCountName: *resource.NewQuantity(s.cards, resource.DecimalSI)}
		for name, v := range map[corev1.ResourceName]int64{
			nvidia.DefaultMemoryName: s.memory, nvidia.DefaultMemoryPercentageName: s.percent, nvidia.DefaultCoresName: s.cores,
		} {
			if v > 0 {
				c.Resources.Limits[name] = *resource.NewQuantity(v, resource.DecimalSI)
			}
		}
	}
	annotations := maps.Clone(s.annotations)
	if s.replica != nil {
		if annotations == nil {
			annotations = map[string]string{}
		}
		maps.Copy(annotations, s.replica(p.index))
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.name, Annotations: annotations},
		Spec:       corev1.PodSpec{SchedulerName: profile.SchedulerName, Containers: []corev1.Container{c}},
	}
}

// tieBroken multiplies every score weight of the hami-scheduler profile by
// 101 and adds NodeRank with weight 1: the profile's own order of nodes
// is kept, and nodes it scores alike are told apart by their rank.
func tieBroken(p *config.KubeSchedulerProfile) {
	// Every profile of a scheduler shares one queue, hence one order.
	p.Plugins.QueueSort = config.PluginSet{Enabled: []config.Plugin{{Name: nameOrderName}}, Disabled: []config.Plugin{{Name: "*"}}}
	if p.SchedulerName != profile.SchedulerName {
		return
	}
	for _, set := range []*config.PluginSet{&p.Plugins.MultiPoint, &p.Plugins.Score} {
		for i := range set.Enabled {
			set.Enabled[i].Weight = max(set.Enabled[i].Weight, 1) * 101
		}
	}
	p.Plugins.MultiPoint.Enabled = append(p.Plugins.MultiPoint.Enabled, config.Plugin{Name: nodeRankName, Weight: 1})
	// As kube-scheduler's own batching suite (scheduler_perf/batching):
	// PodTopologySpread's system defaults would keep every pod unsigned.
	for i := range p.PluginConfig {
		if p.PluginConfig[i].Name == "PodTopologySpread" {
			p.PluginConfig = append(p.PluginConfig[:i], p.PluginConfig[i+1:]...)
			break
		}
	}
	p.PluginConfig = append(p.PluginConfig, config.PluginConfig{Name: "PodTopologySpread", Args: &config.PodTopologySpreadArgs{DefaultingType: config.ListDefaulting}})
}
