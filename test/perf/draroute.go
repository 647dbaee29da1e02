package perf

import (
	"context"

	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

// hamiDRANamespaceLabel marks the namespaces of phases taking HAMi-DRA's
// route: its webhook is registered for them alone, as hami-webhook is for
// none of the benchmark's (the benchmark writes HAMi's pods as HAMi's
// webhook would).
var hamiDRANamespaceLabel = map[string]string{"perf.hami.io/route": hamiDRARoute}

// draSetup is what a run's DRA settings need of the cluster.
type draSetup struct {
	// nodes: a setting runs DRA nodes; hamiDRA: one takes HAMi-DRA's
	// route.
	nodes, hamiDRA bool
	// webhook is the model of HAMi-DRA's webhook, once started.
	webhook *localcluster.HAMiDRAWebhook
}

func draRoutes(settings []Setting) *draSetup {
	d := &draSetup{}
	for _, s := range settings {
		d.nodes = d.nodes || s.DRAPercent > 0
		d.hamiDRA = d.hamiDRA || s.HAMiDRA
	}
	return d
}

// start readies the cluster for DRA nodes: HAMi's DRA driver's
// DeviceClass, as its chart installs it; kube-controller-manager's
// controllers DRA needs (the resource claim controller releases and
// deallocates the claims of pods that are gone, the garbage collector
// deletes the claims the scheduler wrote, which their pods own); and,
// for HAMi-DRA's route, the model of its webhook, registered for the
// namespaces labelled hamiDRANamespaceLabel.
func (d *draSetup) start(ctx context.Context, cp *localcluster.ControlPlane, specs []simnode.Spec) (stop func(), err error) {
	dra := make([]simnode.Spec, len(specs))
	for i, s := range specs {
		s.DRA = simnode.HAMiDRADriver
		dra[i] = s
	}
	if err := localcluster.InstallDeviceClasses(ctx, cp.Config, simnode.DeviceClasses(dra)); err != nil {
		return nil, err
	}
	controllers, err := localcluster.StartControllers(ctx, cp.Config)
	if err != nil {
		return nil, err
	}
	if !d.hamiDRA {
		return controllers.Stop, nil
	}
	d.webhook, err = localcluster.StartHAMiDRAWebhook(ctx, cp.Config, localcluster.HAMiDRAWebhookOptions{NamespaceLabels: hamiDRANamespaceLabel})
	if err != nil {
		controllers.Stop()
		return nil, err
	}
	return func() { d.webhook.Stop(); controllers.Stop() }, nil
}

// percentAsMiB is the card memory in MiB that the request mix asks in
// place of gpumem-percentage when a setting takes HAMi-DRA's route (0:
// the mix asks percentages). HAMi-DRA's webhook does not read
// gpumem-percentage: it would leave it among the pod's extended
// resources, which no node advertises, and such a pod would never be
// placed; both routes get the same pods, asking the same memory in MiB.
func (d *draSetup) percentAsMiB(specs []simnode.Spec) int64 {
	if !d.hamiDRA || len(specs) == 0 {
		return 0
	}
	return int64(specs[0].MemoryMiB)
}
