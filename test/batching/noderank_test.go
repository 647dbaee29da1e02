package batching

import (
	"context"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
)

// rankLabel gives each node a distinct rank, 0 to 100.
const rankLabel = "batching.hami.io/rank"

// nodeRank is a score plugin of this test only: it scores a node by its
// rank, with weight 1 beside the shipped plugins' weights multiplied by
// 101, so that it decides between nodes the shipped profile scores alike
// and nothing else. kube-scheduler breaks such ties at random, which would
// make two runs differ whatever batching does.
type nodeRank struct{}

const nodeRankName = "NodeRank"

var (
	_ fwk.ScorePlugin = nodeRank{}
	_ fwk.SignPlugin  = nodeRank{}
)

func newNodeRank(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
	return nodeRank{}, nil
}

func (nodeRank) Name() string { return nodeRankName }

func (nodeRank) Score(_ context.Context, _ fwk.CycleState, _ *corev1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	rank, err := strconv.ParseInt(nodeInfo.Node().Labels[rankLabel], 10, 64)
	if err != nil {
		return 0, fwk.AsStatus(err)
	}
	return min(max(rank, 0), fwk.MaxNodeScore), nil
}

func (nodeRank) ScoreExtensions() fwk.ScoreExtensions { return nil }

// SignPod: the score reads the node alone.
func (nodeRank) SignPod(context.Context, *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return nil, nil
}

// nameOrder is a queue sort of this test only: pods in name order. The
// scheduler's informer hands over a backlog in no fixed order, and the
// queue otherwise orders by arrival.
type nameOrder struct{}

const nameOrderName = "NameOrder"

var _ fwk.QueueSortPlugin = nameOrder{}

func newNameOrder(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
	return nameOrder{}, nil
}

func (nameOrder) Name() string { return nameOrderName }

func (nameOrder) Less(a, b fwk.QueuedEntityInfo) bool { return entryName(a) < entryName(b) }

func entryName(e fwk.QueuedEntityInfo) string {
	if pi, ok := e.(interface{ GetPodInfo() fwk.PodInfo }); ok {
		if info := pi.GetPodInfo(); info != nil && info.GetPod() != nil {
			return info.GetPod().Name
		}
	}
	return ""
}
