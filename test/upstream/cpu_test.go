//go:build upstream

package upstream

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/google/pprof/profile"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
	"k8s.io/kubernetes/test/utils/client-go/ktesting"
)

// The scheduler's CPU per pod: writeCases wraps each case's measured
// createPods op in a CPU profile of the test process (scheduler_perf's
// startCollectingProfile), and when the workload ends (cpuOptions' hook)
// the profile's samples in the scheduler's code are divided by the pods
// that op created. The process also runs the API server, the informers'
// decoding and, for HAMi's workloads, the simulated node side: those
// samples are not counted unless the scheduler's code is on their stack.

// schedulerCode are the function-name prefixes of the scheduler's code:
// kube-scheduler's and this module's (plugins, devices, ...), except the
// simulated node side and the tests.
var schedulerCode = []string{"k8s.io/kubernetes/pkg/scheduler", "github.com/hami-scheduler/hami-scheduler/"}

var notSchedulerCode = []string{"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode", "github.com/hami-scheduler/hami-scheduler/test/"}

// profiledCase is what the CPU reading needs to know of one test case.
type profiledCase struct {
	// file is the profile's path under -data-items-dir.
	file string
	// count is the measured op's pod count: a number, or a workload
	// parameter ("$name"), times multiplier (a parameter, "" for 1).
	count, multiplier string
}

var (
	profiledMu sync.Mutex
	// profiled are the cases writeCases wrapped, by <topic>/<variant>/<case>.
	profiled = map[string]profiledCase{}
	// cpuPerPod are the results, in seconds.
	cpuPerPod measured
)

// profileMeasuredOp wraps the case's first createPods op that collects
// metrics in a CPU profile, and records it under key.
func profileMeasuredOp(tc object, key string) {
	ops := asList(tc["workloadTemplate"])
	for i, op := range ops {
		o, ok := op.(object)
		if !ok || o["opcode"] != "createPods" || o["collectMetrics"] != true {
			continue
		}
		pc := profiledCase{file: filepath.Join("cpu", key+".pprof"), count: fmt.Sprint(o["count"])}
		if p, ok := o["countParam"].(string); ok {
			pc.count = p
		}
		pc.multiplier, _ = o["countMultiplierParam"].(string)
		start := object{"opcode": "startCollectingProfile", "type": "CPU", "filePath": pc.file}
		stop := object{"opcode": "stopCollectingProfile", "type": "CPU"}
		tc["workloadTemplate"] = append(ops[:i:i], append([]any{start, o, stop}, ops[i+1:]...)...)
		profiledMu.Lock()
		profiled[key] = pc
		profiledMu.Unlock()
		return
	}
}

// cpuOptions reads, when each workload ends, the CPU profile of its
// measured op (if profileMeasuredOp wrapped one).
func cpuOptions() []perf.SchedulerPerfOption {
	return []perf.SchedulerPerfOption{perf.WithPreRunFn(func(tCtx ktesting.TContext, w *perf.Workload) (func(), error) {
		return func() { recordCPU(tCtx, w) }, nil
	})}
}

// recordCPU reads the workload's profile into cpuPerPod and keeps it as
// <case>/<workload>.pprof.
func recordCPU(tCtx ktesting.TContext, w *perf.Workload) {
	dir := flagValue("data-items-dir")
	name := tCtx.Name()
	parts := strings.Split(name, "/")
	if dir == "" || len(parts) < 5 {
		return
	}
	profiledMu.Lock()
	pc, ok := profiled[strings.Join(parts[1:4], "/")]
	profiledMu.Unlock()
	if !ok {
		return
	}
	file := filepath.Join(dir, pc.file)
	kept := strings.TrimSuffix(file, ".pprof") + "/" + parts[4] + ".pprof"
	if err := os.MkdirAll(filepath.Dir(kept), 0o755); err == nil {
		if os.Rename(file, kept) == nil {
			file = kept
		}
	}
	pods, err := measuredPods(pc, w)
	if err != nil {
		tCtx.Logf("no CPU per pod: %v", err)
		return
	}
	seconds, err := schedulerCPU(file)
	if err != nil {
		tCtx.Logf("no CPU per pod: %v", err)
		return
	}
	cpuPerPod.set(name, seconds/float64(pods))
}

// measuredPods resolves the measured op's pod count for the workload.
func measuredPods(pc profiledCase, w *perf.Workload) (int, error) {
	value := func(s string) (int, error) {
		if p, ok := strings.CutPrefix(s, "$"); ok {
			return w.GetParam(p)
		}
		var n int
		_, err := fmt.Sscan(s, &n)
		return n, err
	}
	pods, err := value(pc.count)
	if err != nil {
		return 0, fmt.Errorf("count %q: %w", pc.count, err)
	}
	if pc.multiplier != "" {
		m, err := value(pc.multiplier)
		if err != nil {
			return 0, fmt.Errorf("count multiplier %q: %w", pc.multiplier, err)
		}
		pods *= m
	}
	if pods <= 0 {
		return 0, fmt.Errorf("count %d", pods)
	}
	return pods, nil
}

// schedulerCPU is the CPU time, in seconds, of the profile's samples with
// the scheduler's code on their stack.
func schedulerCPU(path string) (float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	index := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			index = i
		}
	}
	if index < 0 {
		return 0, fmt.Errorf("%s: no cpu nanoseconds samples", path)
	}
	var nanos int64
	for _, s := range p.Sample {
		if onSchedulerStack(s) {
			nanos += s.Value[index]
		}
	}
	return float64(nanos) / 1e9, nil
}

// onSchedulerStack tells whether a frame of the sample is the scheduler's.
func onSchedulerStack(s *profile.Sample) bool {
	for _, loc := range s.Location {
		for _, line := range loc.Line {
			if line.Function != nil && isSchedulerCode(line.Function.Name) {
				return true
			}
		}
	}
	return false
}

func isSchedulerCode(function string) bool {
	for _, p := range notSchedulerCode {
		if strings.HasPrefix(function, p) {
			return false
		}
	}
	for _, p := range schedulerCode {
		if strings.HasPrefix(function, p) {
			return true
		}
	}
	return false
}
