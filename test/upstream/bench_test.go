//go:build upstream

package upstream

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
	"k8s.io/kubernetes/test/utils/client-go/ktesting"

	"github.com/hami-scheduler/hami-scheduler/scheduler/profile"
)

// registry is what hami-scheduler compiles into kube-scheduler.
func registry() frameworkruntime.Registry {
	return profile.Registry()
}

// BenchmarkUpstream runs each of upstream's topics (-topics) with each
// variant (-variants), in that order, then prints the figures side by
// side. Which workloads run is upstream's label filter
// (-perf-scheduling-label-filter: performance by default,
// integration-test for the integration cases) and -bench's pattern, e.g.
// 'BenchmarkUpstream/misc/.*/SchedulingBasic/5000Nodes_10000Pods$'.
func BenchmarkUpstream(b *testing.B) {
	out, started := b.TempDir(), time.Now()
	for _, topic := range strings.Split(*topics, ",") {
		// A topic in a subdirectory (podgroup/gangscheduling) runs as one
		// level of names (podgroup-gangscheduling).
		name := strings.ReplaceAll(topic, "/", "-")
		b.Run(name, func(b *testing.B) {
			dir, opts := topicDir(b, topic), topicOptions(topic)
			for _, v := range topicVariants(topic) {
				b.Run(string(v), func(b *testing.B) {
					cases, err := writeCases(dir, out, name, v)
					if err != nil {
						b.Fatal(err)
					}
					perf.RunBenchmarkPerfScheduling(b, cases, name+"-"+string(v), registry(), opts...)
				})
			}
		})
	}
	printFigures(b, started)
}

// Topics of this package (topics/<name>), run beside upstream's: devices
// is HAMi's own workloads, run with the shipped profile only (without the
// HAMi plugin its pods' cards would be counted by NodeResourcesFit alone,
// which places them wrongly); batched is SchedulingBasic with
// opportunistic batching able to apply.
const (
	devicesTopic = "devices"
	localTopics  = "topics"
)

// topicDir is the directory holding the topic's performance-config.yaml:
// this package's (topics/<topic>) if it has one, else upstream's in
// scheduler_perf.
func topicDir(b *testing.B, topic string) string {
	local, err := filepath.Abs(filepath.Join(localTopics, topic))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(local, "performance-config.yaml")); err == nil {
		return local
	}
	return filepath.Join(schedulerPerfDir(b), topic)
}

// topicOptions are the suite hooks the topic's cases need: the CPU
// profile's reading (cpuOptions) and the batching hints counted
// (countBatchHints) for every topic, and HAMi's node side for HAMi's
// workloads (addDeviceInventory, startNodeSide).
func topicOptions(topic string) []perf.SchedulerPerfOption {
	prepare := []perf.HookFn{countBatchHints}
	opts := cpuOptions()
	if topic == devicesTopic {
		prepare = append(prepare, startNodeSide)
		opts = append(opts, perf.WithNodeUpdateFn(addDeviceInventory))
	}
	return append(opts, perf.WithPrepareFn(func(tCtx ktesting.TContext) error {
		for _, hook := range prepare {
			if err := hook(tCtx); err != nil {
				return err
			}
		}
		return nil
	}))
}

// topicVariants are the variants (-variants) the topic runs with.
func topicVariants(topic string) []variant {
	var out []variant
	for _, v := range strings.Split(*variants, ",") {
		if topic == devicesTopic && variant(v) != withHAMi {
			continue
		}
		out = append(out, variant(v))
	}
	return out
}

// schedulerPerfDir is -upstream-dir, else scheduler_perf in the module
// go.mod pins.
func schedulerPerfDir(b *testing.B) string {
	if *upstreamDir != "" {
		return *upstreamDir
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes").Output()
	if err != nil {
		b.Fatalf("find k8s.io/kubernetes in the module cache (or pass -upstream-dir): %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "test", "integration", "scheduler_perf")
}

// figures are one workload's results in one variant.
type figures struct {
	podsPerSecond, attemptP99 float64
	// sliP99 is the pods' scheduling SLI duration's p99 (first attempt to
	// bound), where the case collects it.
	sliP99 float64
}

// printFigures reads the data items scheduler_perf wrote (-data-items-dir)
// and prints, per workload, pods/s (SchedulingThroughput's average), the
// scheduling attempt's p99 and the scheduler's CPU per pod (cpu_test.go)
// of each variant, and HAMi's pods/s as a share of plain's.
func printFigures(b *testing.B, since time.Time) {
	dir := flagValue("data-items-dir")
	if dir == "" {
		b.Log("no -data-items-dir: no side-by-side table")
		return
	}
	files, _ := filepath.Glob(filepath.Join(dir, "BenchmarkUpstream_*.json"))
	results := map[string]map[variant]figures{}
	for _, f := range files {
		if info, err := os.Stat(f); err != nil || info.ModTime().Before(since) {
			continue // an earlier run's
		}
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		var items perf.DataItems
		if err := json.Unmarshal(data, &items); err != nil {
			b.Fatalf("%s: %v", f, err)
		}
		for _, item := range items.DataItems {
			name, v := workloadOf(item.Labels["Name"])
			if results[name] == nil {
				results[name] = map[variant]figures{}
			}
			fig := results[name][v]
			switch {
			case item.Labels["Metric"] == "SchedulingThroughput":
				fig.podsPerSecond = item.Data["Average"]
			case item.Labels["Metric"] == "scheduler_scheduling_attempt_duration_seconds" && item.Labels["result"] == "scheduled":
				fig.attemptP99 = item.Data["Perc99"]
			case item.Labels["Metric"] == "scheduler_pod_scheduling_sli_duration_seconds":
				fig.sliP99 = item.Data["Perc99"]
			default:
				continue
			}
			results[name][v] = fig
		}
	}
	names := make([]string, 0, len(results))
	for n := range results {
		names = append(names, n)
	}
	sort.Strings(names)
	var sb strings.Builder
	w := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "workload\tpods/s HAMi\tpods/s plain\tHAMi/plain\tattempt p99 HAMi (ms)\tattempt p99 plain (ms)\tSLI p99 HAMi (ms)\tscheduler CPU/pod HAMi (ms)\tscheduler CPU/pod plain (ms)\tbatch hints HAMi\tbatch hints plain\t")
	for _, n := range names {
		h, p := results[n][withHAMi], results[n][withoutHAMi]
		ratio := "-"
		if p.podsPerSecond > 0 && h.podsPerSecond > 0 {
			ratio = fmt.Sprintf("%.1f%%", 100*h.podsPerSecond/p.podsPerSecond)
		}
		fmt.Fprintf(w, "%s\t%.1f\t%.1f\t%s\t%.1f\t%.1f\t%.1f\t%s\t%s\t%s\t%s\t\n", n, h.podsPerSecond, p.podsPerSecond, ratio, h.attemptP99, p.attemptP99, h.sliP99,
			cpuPerPod.cell(n, withHAMi, 1000, "%.2f"), cpuPerPod.cell(n, withoutHAMi, 1000, "%.2f"),
			batchHints.cell(n, withHAMi, 1, "%.0f"), batchHints.cell(n, withoutHAMi, 1, "%.0f"))
	}
	w.Flush()
	fmt.Print("\n" + sb.String())
}

// workloadOf splits a data item's name,
// BenchmarkUpstream/<topic>/<variant>/<case>/<workload>[/<namespace>], into
// <topic>/<case>/<workload> and the variant.
func workloadOf(name string) (string, variant) {
	parts := strings.Split(name, "/")
	if len(parts) < 5 {
		return name, ""
	}
	return strings.Join([]string{parts[1], parts[3], parts[4]}, "/"), variant(parts[2])
}
