package perf

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	hamiv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	devicecache "github.com/hami-scheduler/hami-scheduler/plugins/cache"
	"github.com/hami-scheduler/hami-scheduler/scheduler/profile"
)

// readablePaths are what the benchmark reads from a scheduler process
// without credentials (its metrics and heap). Outside a cluster the
// process has no delegated authentication, so they are opened with
// --authorization-always-allow-paths; nothing else in its command differs
// from the shipped Deployment's.
const readablePaths = "/healthz,/readyz,/livez,/metrics,/debug/pprof/*"

// phaseScheduler is the shipped hami-scheduler binary placing a phase's
// pods, as its own process: started with the command, arguments and
// environment of the shipped Deployment (localcluster.StartSchedulerProcess)
// and the shipped KubeSchedulerConfiguration carrying the phase's HAMi args,
// beside kube-scheduler's default profile for the baseline
// (profile.File), with an administrator's kubeconfig. Its API calls are
// read from its client metrics (rest_client_requests_total), as no
// transport of the benchmark's lies on its way.
type phaseScheduler struct {
	cp   *localcluster.ControlPlane
	proc *localcluster.SchedulerProcess
	// leaseNamespace and leaseName are its leader-election lease.
	leaseNamespace, leaseName string
}

// startPhaseScheduler starts binary for a phase with args (nil: the
// plugin's defaults) and returns once it is ready (its informers synced).
func startPhaseScheduler(ctx context.Context, cp *localcluster.ControlPlane, binary string, args *hamiv1.HAMiArgs, log io.Writer) (*phaseScheduler, error) {
	config, err := profile.File(args, true)
	if err != nil {
		return nil, err
	}
	decoded, err := profile.Decode(config)
	if err != nil {
		return nil, err
	}
	s := &phaseScheduler{cp: cp,
		leaseNamespace: decoded.LeaderElection.ResourceNamespace, leaseName: decoded.LeaderElection.ResourceName}
	s.proc, err = cp.StartSchedulerProcess(ctx, binary, localcluster.SchedulerProcessOptions{
		Config: config, Log: log,
		ExtraArgs: []string{"--authorization-always-allow-paths=" + readablePaths},
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// leadingSince waits for the process to take its leader-election lease
// and returns when it did (the lease's acquireTime): kube-scheduler
// schedules from then on. The process is ready (informers synced) a
// little before; the time it became ready is only seen by polling it,
// later than the process may have started scheduling.
func (s *phaseScheduler) leadingSince(ctx context.Context) (time.Time, error) {
	var since time.Time
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		lease, err := s.cp.Client.CoordinationV1().Leases(s.leaseNamespace).Get(ctx, s.leaseName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" || lease.Spec.AcquireTime == nil {
			return false, nil
		}
		since = lease.Spec.AcquireTime.Time
		return true, nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("hami-scheduler did not take its lease %s/%s: %w", s.leaseNamespace, s.leaseName, err)
	}
	return since, nil
}

// stop ends the process and removes its leader-election lease, which the
// next phase's process would otherwise wait out. It may be called again.
func (s *phaseScheduler) stop(ctx context.Context) {
	if s.proc == nil {
		return
	}
	s.proc.Stop()
	s.proc = nil
	err := s.cp.Client.CoordinationV1().Leases(s.leaseNamespace).Delete(ctx, s.leaseName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		fmt.Fprintf(os.Stderr, "delete lease %s/%s: %v\n", s.leaseNamespace, s.leaseName, err)
	}
}

// metrics scrapes the process's /metrics.
func (s *phaseScheduler) metrics(ctx context.Context) (metricFamilies, error) {
	body, err := s.proc.Get(ctx, "/metrics")
	if err != nil {
		return nil, err
	}
	return parseMetrics(body)
}

// cpuTime is the CPU time the process has used so far (user and system),
// from /proc: reading it costs the process nothing, unlike a scrape of
// its /metrics, which at thousands of cards holds a series per card.
func (s *phaseScheduler) cpuTime() (time.Duration, error) {
	return processCPU(s.proc.Pid())
}

// heapAllocLine is the live heap in the runtime.MemStats that a debug=1
// heap profile ends with.
var heapAllocLine = regexp.MustCompile(`(?m)^# HeapAlloc = (\d+)$`)

// liveHeap is the process's heap after a garbage collection (its
// /debug/pprof/heap with gc=1).
func (s *phaseScheduler) liveHeap(ctx context.Context) (uint64, error) {
	body, err := s.proc.Get(ctx, "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return 0, err
	}
	m := heapAllocLine.FindSubmatch(body)
	if m == nil {
		return 0, fmt.Errorf("no HeapAlloc in the heap profile")
	}
	return strconv.ParseUint(string(m[1]), 10, 64)
}

// cacheStats is what the process's device cache holds, from its
// hami_scheduler_cache_size gauge.
func cacheStats(m metricFamilies) devicecache.Stats {
	size := func(kind string) int {
		return int(m.value("hami_scheduler_cache_size", map[string]string{"kind": kind}))
	}
	return devicecache.Stats{Nodes: size("nodes"), Cards: size("cards"), Pods: size("pods"),
		AssumedPods: size("assumed_pods"), UnreadablePods: size("unreadable_pods")}
}

// processCPU is a process's user and system CPU time, from
// /proc/<pid>/stat (in clock ticks of 10 ms, Linux's USER_HZ).
func processCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: the fields
	// counted from 3 follow its closing parenthesis.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(string(data[i+1:]))
	// utime and stime are fields 14 and 15; fields[0] is field 3.
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields)+2)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	const userHZ = 100
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// ownCPU is the CPU time this process (the control plane and the
// simulated nodes) has used so far, user and system.
func ownCPU() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// clientCalls are the process's API calls by method, from its client
// metrics (rest_client_requests_total), marking failures with their code
// ("PATCH (409)") as apiCounter does; the resource is not among the
// metric's labels. Watches count as GETs.
func clientCalls(m metricFamilies) callDelta {
	calls := callDelta{}
	for _, s := range m.series("rest_client_requests_total", nil) {
		key := label(s, "method")
		if code := label(s, "code"); !strings.HasPrefix(code, "2") && !strings.HasPrefix(code, "1") {
			key += " (" + code + ")"
		}
		if n := int64(s.GetCounter().GetValue()); n > 0 {
			calls[key] += n
		}
	}
	return calls
}

// clientLatency is the mean time of the process's API requests
// (rest_client_request_duration_seconds).
func clientLatency(m metricFamilies) time.Duration {
	return m.histogramTotals("rest_client_request_duration_seconds", nil).mean()
}
