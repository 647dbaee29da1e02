package release

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hami-scheduler/hami-scheduler/hack/manifestgen"
	"github.com/hami-scheduler/hami-scheduler/plugins"
	"github.com/hami-scheduler/hami-scheduler/test/util/release"
)

// hamiDashboardSeries are the scheduler's series that HAMi v2.10's Grafana
// dashboard (dashboards/hami-vgpu-dashboard.json) queries. Its other
// series (hami_host_gpu_*, hami_vgpu_memory_used_bytes,
// hami_vgpu_memory_limit_bytes, hami_container_device_utilization_ratio)
// are its vGPU monitor's, which runs in HAMi's device plugin and stays
// HAMi's.
var hamiDashboardSeries = []string{
	"hami_gpu_memory_limit_bytes",
	"hami_gpu_memory_allocated_bytes",
	"hami_gpu_core_allocated_ratio",
	"hami_gpu_shared_count",
	"hami_node_gpu_memory_allocated_ratio",
}

// seriesName is a series name in a PromQL expression.
var seriesName = regexp.MustCompile(`\b(?:hami|scheduler)_[a-z0-9_]+\b`)

// dashboardSeries are the series every query of the chart's Grafana
// dashboard names (panels and template variables).
func dashboardSeries() ([]string, error) {
	data, err := os.ReadFile(filepath.Join(manifestgen.RepoRoot(), manifestgen.ChartPath, "files", "dashboards", "hami-scheduler.json"))
	if err != nil {
		return nil, err
	}
	var dash struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	var exprs []string
	for _, p := range dash.Panels {
		for _, t := range p.Targets {
			exprs = append(exprs, t.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		exprs = append(exprs, v.Definition)
	}
	var names []string
	for _, e := range exprs {
		names = append(names, seriesName.FindAllString(e, -1)...)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// scrapeMetrics: with a device pod running in a namespace whose quota caps
// device memory, /metrics of every replica behind the scheduler's metrics
// Service (as a ServiceMonitor scrapes them) holds every series HAMi's
// dashboard and the chart's query, and exactly one replica, the leader,
// serves HAMi's device gauges.
func scrapeMetrics(e *env, r *release.Release) {
	e.t.Helper()
	want, err := dashboardSeries()
	if err != nil {
		e.t.Fatal(err)
	}
	want = append(want, hamiDashboardSeries...)
	slices.Sort(want)
	want = slices.Compact(want)
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "scraped"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"limits.nvidia.com/gpumem": *resource.NewQuantity(20000, resource.DecimalSI)}},
	}
	quotas := controlPlane.Client.CoreV1().ResourceQuotas(e.ns)
	if _, err := quotas.Create(e.ctx, quota, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	defer func() { _ = quotas.Delete(e.ctx, quota.Name, metav1.DeleteOptions{}) }()
	e.create(e.pod("scraped", 1, 2000, 0))
	e.waitRunning("scraped")
	defer e.delete("scraped")

	e.eventually("every dashboard series behind the scheduler's metrics Service", func() (bool, string) {
		addrs, err := r.ServiceEndpoints("hami-scheduler", "monitor")
		if err != nil {
			e.t.Fatal(err)
		}
		served := map[string]int{}
		for _, addr := range addrs {
			names, err := scrape(addr)
			if err != nil {
				return false, err.Error()
			}
			for _, n := range names {
				served[n]++
			}
		}
		var missing []string
		for _, n := range want {
			if served[n] == 0 {
				missing = append(missing, n)
			}
		}
		for _, n := range plugins.DeviceGauges {
			if served[n] > 1 {
				e.t.Errorf("%s served by %d replicas behind the Service: a ServiceMonitor would count each card %d times", n, served[n], served[n])
			}
		}
		if len(addrs) > 0 && len(missing) == 0 {
			e.t.Logf("%d series of the dashboards served by %d replicas behind the Service", len(want), len(addrs))
			return true, ""
		}
		return false, fmt.Sprintf("%d endpoints %v; missing %v", len(addrs), addrs, missing)
	})
}

// scrape reads http://addr/metrics and returns the names of the series it
// holds.
func scrape(addr string) ([]string, error) {
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/metrics: %d", addr, resp.StatusCode)
	}
	var names []string
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		names = append(names, name)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}
