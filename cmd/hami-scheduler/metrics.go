package main

import (
	"net/http"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"github.com/hami-scheduler/hami-scheduler/plugins"
)

// leaderGauge is client-go's leader-election gauge as component-base
// registers it: 1 while this process holds its lease, 0 once its elector
// exists and does not.
const leaderGauge = "leader_election_master_status"

// metricsHandler serves the registry (legacyregistry's, which
// kube-scheduler's /metrics serves) except that while leader election is on and this process does not
// lead, HAMi's card, pod and quota gauges (plugins.DeviceGauges) are left
// out. HAMi's Service sends scrapes to its leading scheduler only; here
// every replica is behind the Service and each one's cache sees the same
// cards, so a ServiceMonitor (which scrapes every endpoint) would count
// each card once per replica. The standby keeps its own series (its cache
// size, kube-scheduler's, the process's).
func metricsHandler(registry prometheus.Gatherer, leaderElects bool) http.Handler {
	gather := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		families, err := registry.Gather()
		if !leaderElects || leading(families) {
			return families, err
		}
		return slices.DeleteFunc(families, func(f *dto.MetricFamily) bool {
			return slices.Contains(plugins.DeviceGauges, f.GetName())
		}), err
	})
	return promhttp.InstrumentMetricHandler(prometheus.DefaultRegisterer, promhttp.HandlerFor(gather, promhttp.HandlerOpts{}))
}

// leading reports whether the gathered leader-election gauge says this
// process holds its lease.
func leading(families []*dto.MetricFamily) bool {
	for _, f := range families {
		if f.GetName() != leaderGauge {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetGauge().GetValue() == 1 {
				return true
			}
		}
	}
	return false
}

// leaderElection reports whether the scheduler the command starts elects
// a leader, as kube-scheduler decides it: from the --config file when one
// is given (else on, its default), overridden by an explicit
// --leader-elect.
func leaderElection(c *cobra.Command) (bool, error) {
	elect := true
	if f := c.Flags().Lookup("config"); f != nil && f.Value.String() != "" {
		cfg, err := options.LoadConfigFromFile(klog.Background(), f.Value.String())
		if err != nil {
			return false, err
		}
		elect = cfg.LeaderElection.LeaderElect
	}
	if f := c.Flags().Lookup("leader-elect"); f != nil && f.Changed {
		elect = f.Value.String() == "true"
	}
	return elect, nil
}
